"""Writes packages/testkit/data/quantized-torch.json: quantized cases computed by PyTorch.

Run with the PyTorch the benchmarks use (npm run bench:torch makes it):
  ~/.cache/backplane/torch-venv/bin/python scripts/quantized-cases.py
  npx biome format --write packages/testkit/data/quantized-torch.json

Inputs are seeded random floats (never zeros), edge values, odd and empty shapes. Each
case stores what Backplane needs to rebuild the inputs exactly (float32 values, or the
int repr and quantization parameters) and PyTorch's outputs; op cases (linear, conv2d,
relu, add, matmul) store the output of every quantized engine this PyTorch supports, and
whether they agree. The rounding and broadcasting cases (rounding_cases, broadcast_op_cases:
halves around zero points, qint32 past 2^24, per-channel NaN, broadcast add and matmul,
qint32 add) draw from a second seed, so adding them left the earlier cases as they were;
linear's output scales are pinned (LINEAR_OUT_SCALES: x @ w.T's float32 maximum depends on
the BLAS), so that a rerun writes the same file.
"""
import json
import sys

import numpy as np
import torch

rng = np.random.default_rng(20261125)
OUT = "packages/testkit/data/quantized-torch.json"


def f32list(a):
    """float32 values as JSON numbers (exact); NaN, which JSON lacks, as the string "NaN"."""
    return [float(v) if v == v else "NaN" for v in np.asarray(a, dtype=np.float32).ravel()]


def quantize_cases():
    cases = []
    specs = [
        ("random, quint8", [7, 5], "quint8", 0.05, 128),
        ("random, qint8", [3, 11], "qint8", 0.02, -3),
        ("random, qint32", [13], "qint32", 0.001, 0),
        ("halfway values round to even", [8], "quint8", 0.5, 10),
        ("clamped both ways, quint8", [6], "quint8", 0.01, 5),
        ("empty", [0, 4], "qint8", 0.1, 0),
        ("one element", [1], "qint8", 0.3, 127),
        ("NaN, quint8", [3], "quint8", 0.1, 3),
        ("NaN, qint8", [3], "qint8", 0.1, 3),
        ("NaN, qint32", [3], "qint32", 0.1, 3),
    ]
    for name, shape, dt, scale, zp in specs:
        if name.startswith("halfway"):
            x = np.array([0.25, 0.75, 1.25, -0.25, -0.75, 2.25, -1.25, 0.0], np.float32)
        elif name.startswith("NaN"):
            x = np.array([float("nan"), 1.0, -0.7], np.float32)
        elif name.startswith("clamped"):
            x = np.array([-1e6, 1e6, -3.0, 3.0, 3.4e38, -3.4e38], np.float32)
        else:
            x = rng.uniform(-4, 4, size=shape).astype(np.float32)
            x[x == 0] = 0.5
        t = torch.from_numpy(x.reshape(shape))
        q = torch.quantize_per_tensor(t, scale, zp, getattr(torch, dt))
        ints = q.int_repr().numpy().astype(np.int64)
        # PyTorch subtracts the zero point from qint32 values in int32 and wraps past the
        # range (2^31 away from the answer): not a behaviour to copy, so not compared.
        wraps = dt == "qint32" and bool(((ints - zp) < -2**31).any() or ((ints - zp) >= 2**31).any())
        cases.append({
            "name": name, "kind": "per_tensor", "shape": shape, "x": f32list(x), "dtype": dt,
            "scale": scale, "zeroPoint": zp,
            "intRepr": [int(v) for v in q.int_repr().ravel().tolist()],
            "dequantized": None if wraps else f32list(q.dequantize().numpy()),
        })
    for name, shape, axis, dt in [("per channel, axis 0, qint8", [4, 6], 0, "qint8"),
                                  ("per channel, axis 1, quint8", [3, 5, 2], 1, "quint8")]:
        x = rng.uniform(-2, 2, size=shape).astype(np.float32)
        n = shape[axis]
        scales = rng.uniform(0.005, 0.05, size=n)
        zps = rng.integers(-10, 10, size=n) if dt == "qint8" else rng.integers(100, 150, size=n)
        q = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales),
                                       torch.from_numpy(zps.astype(np.int64)), axis, getattr(torch, dt))
        cases.append({
            "name": name, "kind": "per_channel", "shape": shape, "x": f32list(x), "dtype": dt,
            "scales": [float(s) for s in scales], "zeroPoints": [int(z) for z in zps], "axis": axis,
            "intRepr": [int(v) for v in q.int_repr().ravel().tolist()],
            "dequantized": f32list(q.dequantize().numpy()),
        })
    return cases


LINEAR_OUT_SCALES = {
    "1x1x1": 0.0004548797420426911,
    "7x13x5 (primes)": 0.008178358451992858,
    "4x64x16, no bias": 0.025429613449994254,
    "3x33x17, per channel": 0.02698051415237726,
    "16x256x64, per channel": 0.06950201894722732,
    "2x100x3, saturating output scale": 0.002451906952203489,
}


def linear_cases():
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    specs = [
        ("1x1x1", 1, 1, 1, "per_tensor", True),
        ("7x13x5 (primes)", 7, 13, 5, "per_tensor", True),
        ("4x64x16, no bias", 4, 64, 16, "per_tensor", False),
        ("3x33x17, per channel", 3, 33, 17, "per_channel", True),
        ("16x256x64, per channel", 16, 256, 64, "per_channel", True),
        ("2x100x3, saturating output scale", 2, 100, 3, "per_tensor", True),
        ("empty batch: 0x8x4", 0, 8, 4, "per_tensor", True),
    ]
    cases = []
    for name, m, k, n, scheme, with_bias in specs:
        x = rng.uniform(-1, 1, size=(m, k)).astype(np.float32)
        w = rng.uniform(-0.5, 0.5, size=(n, k)).astype(np.float32)
        b = rng.uniform(-0.2, 0.2, size=n).astype(np.float32) if with_bias else None
        x_scale, x_zp = 2.0 / 255, 128
        xq = torch.quantize_per_tensor(torch.from_numpy(x), x_scale, x_zp, torch.quint8)
        if scheme == "per_tensor":
            w_scale = float(np.abs(w).max() / 127)
            wq = torch.quantize_per_tensor(torch.from_numpy(w), w_scale, 0, torch.qint8)
            wparams = {"scale": w_scale, "zeroPoint": 0}
        else:
            scales = (np.abs(w).max(axis=1) / 127).astype(np.float64)
            wq = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(scales),
                                            torch.zeros(n, dtype=torch.int64), 0, torch.qint8)
            wparams = {"scales": [float(s) for s in scales], "zeroPoints": [0] * n, "axis": 0}
        ref = x @ w.T + (b if b is not None else 0)
        out_scale = float(max(np.abs(ref).max(), 1e-3) * 2 / 255) if m > 0 else 0.05
        if name.startswith("2x100x3"):
            out_scale = out_scale / 8  # most outputs clamp at 0 or 255
        # The float32 maximum of x @ w.T depends on the BLAS's summation order: the scales
        # the data was first written with are kept, so that the cases come out the same.
        out_scale = LINEAR_OUT_SCALES.get(name, out_scale)
        out_zp = 128
        outs = {}
        for e in engines:
            torch.backends.quantized.engine = e
            try:
                packed = torch.ops.quantized.linear_prepack(
                    wq, torch.from_numpy(b) if b is not None else None)
                y = torch.ops.quantized.linear(xq, packed, out_scale, out_zp)
                outs[e] = [int(v) for v in y.int_repr().ravel().tolist()]
            except Exception as err:  # an engine that refuses the case says why
                outs[e] = str(err).splitlines()[0]
        ints = [v for v in outs.values() if isinstance(v, list)]
        agree = all(v == ints[0] for v in ints)
        cases.append({
            "name": name, "m": m, "k": k, "n": n,
            "x": {"intRepr": [int(v) for v in xq.int_repr().ravel().tolist()],
                  "scale": x_scale, "zeroPoint": x_zp},
            "w": {"intRepr": [int(v) for v in wq.int_repr().ravel().tolist()], **wparams},
            "bias": f32list(b) if b is not None else None,
            "outScale": out_scale, "outZeroPoint": out_zp,
            "torch": outs, "enginesAgree": agree,
        })
    return engines, cases


def qrepr(q):
    """A per-tensor quantized tensor as the JSON the testkit rebuilds it from."""
    return {"shape": list(q.shape), "dtype": str(q.dtype).replace("torch.", ""),
            "intRepr": [int(v) for v in q.int_repr().ravel().tolist()],
            "scale": float(q.q_scale()), "zeroPoint": int(q.q_zero_point())}


def per_engine(engines, run):
    """run() under each engine: its integers, or the first line of its error."""
    outs = {}
    for e in engines:
        torch.backends.quantized.engine = e
        try:
            outs[e] = [int(v) for v in run().int_repr().ravel().tolist()]
        except Exception as err:  # an engine that refuses the case says why
            outs[e] = str(err).splitlines()[0]
    ints = [v for v in outs.values() if isinstance(v, list)]
    return outs, all(v == ints[0] for v in ints)


def rand_q(shape, dtype, scale, zp):
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    x[x == 0] = 0.25
    return torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, dtype)


def elementwise_cases(engines):
    cases = []
    for name, shape, dt, zp in [("relu, quint8 [5, 7]", [5, 7], torch.quint8, 130),
                                ("relu, qint8 [3, 2, 9]", [3, 2, 9], torch.qint8, -5),
                                ("relu, empty", [0, 3], torch.quint8, 7)]:
        q = rand_q(shape, dt, 0.01, zp)
        outs, agree = per_engine(engines, lambda: torch.relu(q))
        cases.append({"name": name, "op": "relu", "a": qrepr(q), "torch": outs, "enginesAgree": agree})
    # PyTorch's relu refuses per-channel tensors; backplane's takes them (tested there).
    for name, shape, dt, (za, zb, zo), out_scale in [
            ("add, quint8 [1000]", [1000], torch.quint8, (120, 131, 127), 0.0157),
            ("add, qint8 [7, 13]", [7, 13], torch.qint8, (3, -4, 0), 0.011),
            ("add, saturating output scale", [64], torch.quint8, (128, 128, 128), 0.002),
            ("add, one element", [1], torch.quint8, (0, 255, 60), 0.02),
            ("add, empty", [0], torch.quint8, (1, 2, 3), 0.1)]:
        a = rand_q(shape, dt, 0.0123, za)
        b = rand_q(shape, dt, 0.0071, zb)
        outs, agree = per_engine(engines, lambda: torch.ops.quantized.add(a, b, out_scale, zo))
        cases.append({"name": name, "op": "add", "a": qrepr(a), "b": qrepr(b), "outScale": out_scale,
                      "outZeroPoint": zo, "torch": outs, "enginesAgree": agree})
    for name, sa, sb, dt, out_scale, zo in [
            ("matmul 13x37 @ 37x11, quint8", [13, 37], [37, 11], torch.quint8, 0.05, 130),
            ("matmul batched 2x3x5 @ 2x5x4, quint8", [2, 3, 5], [2, 5, 4], torch.quint8, 0.02, 128),
            ("matmul 6x16 @ 16x9, qint8", [6, 16], [16, 9], torch.qint8, 0.03, -2),
            ("matmul 1x1 @ 1x1", [1, 1], [1, 1], torch.quint8, 0.001, 100),
            ("matmul empty 0x4 @ 4x3", [0, 4], [4, 3], torch.quint8, 0.01, 128)]:
        za, zb = (128, 125) if dt == torch.quint8 else (2, -3)
        a = rand_q(sa, dt, 0.008, za)
        b = rand_q(sb, dt, 0.009, zb)
        outs, agree = per_engine(engines, lambda: torch.ops.quantized.matmul(a, b, out_scale, zo))
        cases.append({"name": name, "op": "matmul", "a": qrepr(a), "b": qrepr(b), "outScale": out_scale,
                      "outZeroPoint": zo, "torch": outs, "enginesAgree": agree})
    return cases


def qrepr_channel(q):
    return {"shape": list(q.shape), "dtype": str(q.dtype).replace("torch.", ""),
            "intRepr": [int(v) for v in q.int_repr().ravel().tolist()],
            "scales": [float(v) for v in q.q_per_channel_scales().tolist()],
            "zeroPoints": [int(v) for v in q.q_per_channel_zero_points().tolist()],
            "axis": int(q.q_per_channel_axis())}


def conv_cases(engines):
    specs = [  # name, N, C, H, W, O, kh, kw, stride, padding, dilation, groups, per channel, bias
        ("3x3 pad 1, 2 images", 2, 8, 9, 7, 6, 3, 3, 1, 1, 1, 1, False, True),
        ("1x1, per channel", 1, 16, 5, 5, 20, 1, 1, 1, 0, 1, 1, True, True),
        ("depthwise 3x3 stride 2", 1, 12, 11, 10, 12, 3, 3, 2, 1, 1, 12, True, True),
        ("groups 2, dilation 2, padding 2 > k/2", 1, 6, 10, 9, 4, 3, 3, 1, 2, 2, 2, False, True),
        ("7x7 stride 2 pad 3 (a stem), no bias", 1, 3, 17, 15, 8, 7, 7, 2, 3, 1, 1, True, False),
        ("5x3 kernel, stride (2, 1), 1 channel", 1, 1, 8, 6, 3, 5, 3, (2, 1), (1, 0), 1, 1, False, True),
        ("1x1 output from a 1x1 input", 1, 4, 1, 1, 5, 1, 1, 1, 0, 1, 1, False, True),
        ("empty batch", 0, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1, False, True),
    ]
    cases = []
    for name, n, c, h, w_, o, kh, kw, st, pad, dil, g, perch, with_bias in specs:
        x = rng.uniform(-1, 1, size=(n, c, h, w_)).astype(np.float32)
        w = rng.uniform(-0.5, 0.5, size=(o, c // g, kh, kw)).astype(np.float32)
        b = rng.uniform(-0.2, 0.2, size=o).astype(np.float32) if with_bias else None
        xq = torch.quantize_per_tensor(torch.from_numpy(x), 2.0 / 255, 128, torch.quint8)
        if perch:
            scales = (np.abs(w).reshape(o, -1).max(axis=1) / 127).astype(np.float64)
            wq = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(scales),
                                            torch.zeros(o, dtype=torch.int64), 0, torch.qint8)
            wjson = qrepr_channel(wq)
        else:
            wq = torch.quantize_per_tensor(torch.from_numpy(w), float(np.abs(w).max() / 127), 0, torch.qint8)
            wjson = qrepr(wq)
        pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]
        out_scale, out_zp = 0.03, 120

        def run():
            packed = torch.ops.quantized.conv2d_prepack(
                wq, torch.from_numpy(b) if b is not None else None, pair(st), pair(pad), pair(dil), g)
            return torch.ops.quantized.conv2d(xq, packed, out_scale, out_zp)
        outs, agree = per_engine(engines, run)
        cases.append({"name": name, "x": qrepr(xq), "w": wjson,
                      "bias": f32list(b) if b is not None else None,
                      "stride": pair(st), "padding": pair(pad), "dilation": pair(dil), "groups": g,
                      "outScale": out_scale, "outZeroPoint": out_zp, "torch": outs, "enginesAgree": agree})
    return cases


# The rounding cases below draw from their own generator, so the cases above stay the same.
rng2 = np.random.default_rng(20261127)


def quantize_case(name, x, dt, scale=None, zp=None, scales=None, zps=None, axis=None):
    """A quantize case as quantize_cases() writes them: per tensor, or per channel with scales."""
    x = np.asarray(x, np.float32)
    t = torch.from_numpy(x.copy())
    if scales is None:
        q = torch.quantize_per_tensor(t, scale, zp, getattr(torch, dt))
        ints = q.int_repr().numpy().astype(np.int64)
        wraps = dt == "qint32" and bool(((ints - zp) < -2**31).any() or ((ints - zp) >= 2**31).any())
        params = {"kind": "per_tensor", "scale": scale, "zeroPoint": zp}
    else:
        q = torch.quantize_per_channel(t, torch.tensor(scales, dtype=torch.float64),
                                       torch.tensor(zps, dtype=torch.int64), axis, getattr(torch, dt))
        wraps = False  # per channel, PyTorch subtracts the zero point in int64
        params = {"kind": "per_channel", "scales": scales, "zeroPoints": zps, "axis": axis}
    return {"name": name, **params, "shape": list(x.shape), "x": f32list(x), "dtype": dt,
            "intRepr": [int(v) for v in q.int_repr().ravel().tolist()],
            "dequantized": None if wraps else f32list(q.dequantize().numpy())}


def halves(scale, n):
    """n values at (k + 1/2) · scale in float32 (ties, or near them once rounded), random k."""
    return ((rng2.integers(-300, 300, n) + 0.5) * scale).astype(np.float32)


def rounding_cases():
    """Where the zero point goes in the rounding: PyTorch 2.13 adds it before rounding (in
    one FMA for quint8 and qint8 per tensor, in float32 for qint32 and per channel)."""
    cases = [
        quantize_case("zero point before rounding: halves, quint8 zp 1", [0.5, 1.5, 2.5, -0.5, 3.5, 253.5],
                      "quint8", 1.0, 1),
        quantize_case("fused multiply-add: -12.15 at scale 0.1, quint8 zp 128", [-12.15, -12.25, 12.15, 0.05],
                      "quint8", 0.1, 128),
        quantize_case("qint32, zero point -2^31 added in float32", [1.0, 100.0, -1.0, 3e9, 0.5, 1.5],
                      "qint32", 1.0, -2**31),
        quantize_case("qint32, zero point 2^31 - 1 added in float32",
                      [-1.0, 1.0, -100.0, -200.0, float("nan"), -3e9], "qint32", 1.0, 2**31 - 1),
        quantize_case("qint32, values past 2^24", np.concatenate([[16777216.0, 3.0, 16777217.0],
                      rng2.uniform(-3e9, 3e9, 37)]), "qint32", 0.37, 100),
        quantize_case("per channel, quint8: halves and NaN (0)", [[0.5, 1.5, 2.5, float("nan")]], "quint8",
                      scales=[1.0], zps=[1], axis=0),
    ]
    # 130 values: two 64-element vector blocks and a scalar tail.
    for dt, zps in [("quint8", [1, 128, 255]), ("qint8", [-128, -1, 3])]:
        for zp in zps:
            for scale in [0.1, 1 / 3]:
                cases.append(quantize_case(f"halves, {dt} zp {zp}, scale {scale:.4g}", halves(scale, 130),
                                           dt, scale, zp))
    cases.append(quantize_case("halves, qint32 zp 7, scale 0.1", halves(0.1, 130), "qint32", 0.1, 7))
    for dt, zps in [("quint8", [0, 128, 255]), ("qint8", [-1, 3, 127]), ("qint32", [7, -2**31, 2**31 - 1])]:
        scales = [0.1, 1 / 3, 0.007]
        x = np.stack([halves(s, 70) for s in scales])
        x[0, 5] = x[1, 7] = float("nan")
        cases.append(quantize_case(f"per channel halves and NaN, {dt}, axis 0", x, dt,
                                   scales=scales, zps=zps, axis=0))
        cases.append(quantize_case(f"per channel halves and NaN, {dt}, axis 1", x.T.copy(), dt,
                                   scales=scales, zps=zps, axis=1))
    # Integers past 2^24: dequantize converts q and the zero point to float32 first.
    cases.append(quantize_case("per channel, qint32 past 2^24", rng2.uniform(-2e6, 2e6, (3, 50)), "qint32",
                               scales=[1e-3, 0.1, 0.3], zps=[0, 1, -3], axis=0))
    return cases


def broadcast_op_cases(engines):
    """add broadcasts (and takes qint32); matmul broadcasts leading dimensions and takes 1-D."""
    def rand(shape, dt, scale, zp, spread=1.0):
        x = np.asarray(rng2.uniform(-1, 1, size=shape) * spread, dtype=np.float32)
        return torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, dt)

    cases = []
    for name, sa, sb, dt, spread in [
            ("add broadcast [2, 3] + [3], quint8", [2, 3], [3], torch.quint8, 1),
            ("add broadcast [2, 1] + [1, 3], qint8", [2, 1], [1, 3], torch.qint8, 1),
            ("add broadcast [] + [4, 5], quint8", [], [4, 5], torch.quint8, 1),
            ("add broadcast [4, 5, 6] + [5, 6], quint8", [4, 5, 6], [5, 6], torch.quint8, 1),
            ("add broadcast [3, 100] + [100], qint8", [3, 100], [100], torch.qint8, 1),
            ("add qint32 [100]", [100], [100], torch.qint32, 1e4),
            ("add qint32 broadcast [7, 13] + [13]", [7, 13], [13], torch.qint32, 1e4)]:
        zpa, zpb, zpo = (120, 131, 127) if dt == torch.quint8 else (3, -4, 0)
        a = rand(sa, dt, 0.0123, zpa, spread)
        b = rand(sb, dt, 0.0071, zpb, spread)
        run = lambda: torch.ops.quantized.add(a, b, 0.0157, zpo)  # noqa: E731
        outs, agree = per_engine(engines, run)
        cases.append({"name": name, "op": "add", "a": qrepr(a), "b": qrepr(b), "outScale": 0.0157,
                      "outZeroPoint": zpo, "outShape": list(run().shape), "torch": outs, "enginesAgree": agree})
    for name, sa, sb in [("matmul broadcast [1, 3, 5] @ [2, 5, 4]", [1, 3, 5], [2, 5, 4]),
                         ("matmul broadcast [3, 4] @ [2, 4, 5]", [3, 4], [2, 4, 5]),
                         ("matmul broadcast [2, 1, 3, 4] @ [5, 4, 2]", [2, 1, 3, 4], [5, 4, 2]),
                         ("matmul 1-D @ 1-D: [6] @ [6]", [6], [6]),
                         ("matmul 1-D @ 2-D: [7] @ [7, 3]", [7], [7, 3]),
                         ("matmul 3-D @ 1-D: [2, 3, 6] @ [6]", [2, 3, 6], [6])]:
        a = rand(sa, torch.quint8, 0.008, 128)
        b = rand(sb, torch.quint8, 0.009, 125)
        run = lambda: torch.ops.quantized.matmul(a, b, 0.02, 128)  # noqa: E731
        outs, agree = per_engine(engines, run)
        cases.append({"name": name, "op": "matmul", "a": qrepr(a), "b": qrepr(b), "outScale": 0.02,
                      "outZeroPoint": 128, "outShape": list(run().shape), "torch": outs, "enginesAgree": agree})
    return cases


engines, lin = linear_cases()
quant = quantize_cases()
ops = elementwise_cases(engines)
conv = conv_cases(engines)
quant += rounding_cases()
ops += broadcast_op_cases(engines)
data = {
    "generator": "scripts/quantized-cases.py",
    "torch": torch.__version__,
    "engines": engines,
    "quantize": quant,
    "linear": lin,
    "ops": ops,
    "conv2d": conv,
}
with open(OUT, "w") as f:
    json.dump(data, f, separators=(",", ":"))
    f.write("\n")
print(f"{OUT}: torch {torch.__version__}, engines {engines}, "
      f"{len(data['quantize'])} quantize cases, {len(lin)} linear cases, "
      f"engines agree on {sum(c['enginesAgree'] for c in lin)}; {len(ops)} relu/add/matmul cases "
      f"(agree on {sum(c['enginesAgree'] for c in ops)}), {len(conv)} conv2d cases "
      f"(agree on {sum(c['enginesAgree'] for c in conv)})", file=sys.stderr)
