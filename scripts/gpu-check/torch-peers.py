"""PyTorch's side of the GPU check: the cases of cases.json, timed as timings.ts times
Backplane (warm-up, then batches of back-to-back calls closed by one synchronize; the median
batch's time per call). Writes torch.json into the folder given as the first argument."""

import json
import os
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as e:
    print(f"torch-peers: PyTorch is not importable by {sys.executable} ({e}); nothing timed")
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = json.load(open(os.path.join(HERE, "cases.json")))
# BACKPLANE_GPU_CASES: a file whose sections replace these (as io.ts reads it).
if os.environ.get("BACKPLANE_GPU_CASES"):
    CASES.update(json.load(open(os.environ["BACKPLANE_GPU_CASES"])))
QUICK = "--quick" in sys.argv
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
rows = []


def time_calls(fn):
    t = CASES["timing"]
    fn()
    fn()
    torch.cuda.synchronize()
    s = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = (time.perf_counter() - s) * 1000
    batch_ms = t["batchMs"] / 4 if QUICK else t["batchMs"]
    calls = max(1, min(t["maxCalls"], int(-(-batch_ms // max(one, 1e-6)))))
    per_call = []
    for _ in range(2 if QUICK else t["batches"]):
        s = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - s) * 1000 / calls)
    per_call.sort()
    return per_call[len(per_call) // 2]


def row(suite, case, impl, flop, fn):
    try:
        ms = time_calls(fn)
        r = {"suite": suite, "case": case, "impl": impl, "ms": ms, "tflops": flop / (ms * 1e9)}
    except Exception as e:  # a backend that refuses the case is a row with its reason
        r = {"suite": suite, "case": case, "impl": impl, "error": str(e).split("\n")[0][:300]}
    rows.append(r)
    print(f"{suite:8} {case:42} {impl:20} " + (f"{r['ms'] * 1000:10.1f} us {r['tflops']:7.1f} TFLOP/s" if "ms" in r else f"ERROR {r['error']}"), flush=True)


def overhead():
    a = torch.randn(1, 1, device="cuda")
    for _ in range(100):
        torch.matmul(a, a)
    torch.cuda.synchronize()
    calls = CASES["overhead"]["calls"]
    enqueue = []
    for _ in range(3):
        s = time.perf_counter()
        for _ in range(calls):
            torch.matmul(a, a)
        torch.cuda.synchronize()
        enqueue.append((time.perf_counter() - s) / calls)
    latency = []
    for _ in range(200):
        s = time.perf_counter()
        torch.matmul(a, a)
        torch.cuda.synchronize()
        latency.append(time.perf_counter() - s)
    med = lambda x: sorted(x)[len(x) // 2]
    rows.append({"suite": "overhead", "case": "matmul 1x1 fp32, back to back (us/call)", "impl": "torch", "ms": med(enqueue) * 1000})
    rows.append({"suite": "overhead", "case": "matmul 1x1 fp32, call + synchronize (us)", "impl": "torch", "ms": med(latency) * 1000})


def gemm():
    n = 1024 if QUICK else CASES["gemm"]["n"]
    for p in CASES["gemm"]["precisions"]:
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[p]
        torch.backends.cuda.matmul.allow_tf32 = p == "tf32"
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        row("gemm", f"{n} {p}", "torch.matmul", 2 * n**3, lambda: torch.matmul(a, b))
    torch.backends.cuda.matmul.allow_tf32 = False


def conv():
    c = CASES["conv2d"]
    for dname in c["dtypes"]:
        dtype = DTYPES[dname]
        for l in c["layers"][:2] if QUICK else c["layers"]:
            x = torch.randn(c["batch"], l["c"], l["hw"], l["hw"], device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
            w = torch.randn(l["k"], l["c"], l["r"], l["r"], device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
            oh = (l["hw"] + 2 * l["pad"] - l["r"]) // l["stride"] + 1
            flop = 2 * c["batch"] * l["k"] * oh * oh * l["c"] * l["r"] * l["r"]
            fn = lambda: F.conv2d(x, w, stride=l["stride"], padding=l["pad"])
            row("conv2d", f"{l['name']} {dname} NHWC", "torch (cudnn)", flop, fn)


def sdpa():
    s = CASES["sdpa"]
    b, h = s["batch"], s["heads"]
    for g in s["grid"]:
        for n in g["seq"][:1] if QUICK else g["seq"]:
            for d in g["headDim"]:
                q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=DTYPES[g["dtype"]]) for _ in range(3))
                for causal in g["causal"]:
                    flop = 4 * b * h * n * n * d / (2 if causal else 1)
                    name = f"B{b} H{h} N{n} d{d} {g['dtype']}" + (" causal" if causal else "")
                    for fam in s["families"]:
                        def fn(fam=fam, causal=causal):
                            with sdpa_kernel([getattr(SDPBackend, fam)]):
                                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        row("sdpa", name, fam, flop, fn)
                del q, k, v
                torch.cuda.empty_cache()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "artifacts/gpu-check"
    os.makedirs(out, exist_ok=True)
    info = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    print(json.dumps(info), flush=True)
    if not torch.cuda.is_available():
        print("torch-peers: torch sees no CUDA device; nothing timed")
    else:
        for suite in (overhead, gemm, conv, sdpa):
            try:
                suite()
            except Exception as e:
                rows.append({"suite": suite.__name__, "case": "(suite)", "impl": "-", "error": repr(e)[:300]})
    json.dump({"info": info, "rows": rows}, open(os.path.join(out, "torch.json"), "w"), indent=1)


main()
