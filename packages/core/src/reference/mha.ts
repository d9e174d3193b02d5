/**
 * The two multiHeadAttention kernels of the core. Both are compositions of dispatched ops
 * (matmul, add, scaledDotProductAttention), so each step runs on the fastest kernel
 * installed; they differ in the in-projection:
 * - slow path: three matmuls, one per third of the packed weight or one per separate
 *   weight (torch's general path, and its kdim/vdim one);
 * - fast path (flag mha.fastpathEnabled): for self-attention, one matmul of the input by
 *   the whole packed weight [3E, E], whose output [..., L, 3E] is read as q, k and v
 *   through strided views (no copies), as torch's fast path does with its packed QKV.
 */
import { add } from "../ops/elementwise.ts";
import { matmul } from "../ops/matmul.ts";
import type { MhaParams } from "../ops/mha.ts";
import { scaledDotProductAttention } from "../ops/sdpa.ts";
import type { KernelDefinition } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";

/** A view of t's elements with the given layout (shares t's storage). */
function view(t: Tensor, shape: number[], strides: number[], offset: number): Tensor {
  t.storage.retain();
  return new Tensor(t.storage, t.dtype, shape, strides, offset);
}

/** Rows [start, start + count) of a 2-D weight, or elements of a 1-D bias. */
function rows(t: Tensor, start: number, count: number): Tensor {
  return t.rank === 1
    ? view(t, [count], [t.strides[0]], t.offset + start * t.strides[0])
    : view(t, [count, t.shape[1]], [...t.strides], t.offset + start * t.strides[0]);
}

/** x W^T + b as a contiguous tensor, disposing what it made on the way. */
function linear(x: Tensor, w: Tensor, b: Tensor | null): Tensor {
  const wt = w.transpose(0, 1);
  let y: Tensor | undefined;
  try {
    y = matmul(x, wt);
    const z = b ? add(y, b) : y.contiguous();
    if (z.isContiguous) return z;
    const c = z.contiguous();
    z.dispose();
    return c;
  } finally {
    wt.dispose();
    y?.dispose();
  }
}

/**
 * Heads of a projection: `x` holds rows of `width` elements (row stride `rowStride`) at
 * `offset`; its E columns are split into H heads of d, giving [..., H, L, d] (a view).
 */
function headsView(p: MhaParams, x: Tensor, n: number, rowStride: number, offset: number): Tensor {
  const H = p.numHeads;
  const d = p.headDim;
  const shape = [H, n, d];
  const strides = [d, rowStride, 1];
  if (p.batchShape.length) {
    shape.unshift(p.batchShape[0]);
    strides.unshift(n * rowStride);
  }
  // An empty projection (L = 0 or B = 0) has no storage to offset into: the k and v views
  // at columns E and 2E would point past it and be refused; they read nothing anyway.
  return view(x, shape, strides, x.offset + (x.numel === 0 ? 0 : offset));
}

/** Attention of the heads and the out-projection; disposes q, k, v. */
function attendAndProject(p: MhaParams, q: Tensor, k: Tensor, v: Tensor): Tensor {
  let attn: Tensor | undefined;
  let merged: Tensor | undefined;
  let perm: Tensor | undefined;
  try {
    attn = scaledDotProductAttention(q, k, v, {
      attnMask: p.attnMask,
      isCausal: p.isCausal,
    });
    // [..., H, L, d] -> [..., L, H, d] -> [..., L, E]
    perm = p.batchShape.length ? attn.permute([0, 2, 1, 3]) : attn.permute([1, 0, 2]);
    merged = perm.reshape([...p.batchShape, p.L, p.E]);
    return linear(merged, p.outProjWeight, p.outProjBias);
  } finally {
    for (const t of [q, k, v, attn, perm, merged]) t?.dispose();
  }
}

/** Three in-projections, attention through the dispatcher, out-projection. */
export function mhaSlowPath(p: MhaParams): Tensor {
  const { E } = p;
  const parts: Tensor[] = [];
  const separate = [p.qProjWeight, p.kProjWeight, p.vProjWeight];
  const proj = (x: Tensor, i: number) => {
    // Rows of the packed weight (a view to dispose), or the separate one (the caller's).
    const w = p.inProjWeight ? rows(p.inProjWeight, i * E, E) : separate[i]!;
    if (w !== separate[i]) parts.push(w);
    const b = p.inProjBias ? rows(p.inProjBias, i * E, E) : null;
    if (b) parts.push(b);
    return linear(x, w, b);
  };
  let q: Tensor | undefined;
  let k: Tensor | undefined;
  let v: Tensor | undefined;
  try {
    q = proj(p.query, 0);
    k = proj(p.key, 1);
    v = proj(p.value, 2);
    return attendAndProject(
      p,
      headsView(p, q, p.L, E, 0),
      headsView(p, k, p.S, E, 0),
      headsView(p, v, p.S, E, 0),
    );
  } finally {
    for (const t of [q, k, v, ...parts]) t?.dispose();
  }
}

export function mhaFastPathSupports(p: MhaParams): true | string {
  if (!p.inProjWeight)
    return "the in-projections are separate (qProjWeight, kProjWeight, vProjWeight); the fast path fuses the packed inProjWeight only";
  if (!p.selfAttention)
    return "query, key and value are not one tensor (not self-attention); the fast path fuses the in-projections only then";
  return true;
}

/** Self-attention: one matmul by the packed [3E, E] weight, q/k/v read as views of its output. */
export function mhaFastPath(p: MhaParams): Tensor {
  const { E, L } = p;
  const qkv = linear(p.query, p.inProjWeight!, p.inProjBias); // [..., L, 3E], contiguous
  try {
    return attendAndProject(
      p,
      headsView(p, qkv, L, 3 * E, 0),
      headsView(p, qkv, L, 3 * E, E),
      headsView(p, qkv, L, 3 * E, 2 * E),
    );
  } finally {
    qkv.dispose();
  }
}

/**
 * Both compositions as kernels of `device` (named "fast-path" and "slow-path" on the cpu,
 * prefixed with the device elsewhere): a backend that has matmul, add and
 * scaledDotProductAttention kernels registers them, and multiHeadAttention runs on its
 * tensors with each step on its kernels. `gate` says why the device's steps would refuse
 * params (float16 without the device's support): the compositions refuse them then, rather
 * than fail on their first step.
 */
export function mhaCompositions(
  device: string,
  dtypes: readonly DType[],
  gate: (p: MhaParams) => true | string = () => true,
): KernelDefinition<MhaParams>[] {
  const prefix = device === "cpu" ? "" : `${device}-`;
  return [
    {
      op: "multiHeadAttention",
      name: `${prefix}fast-path`,
      device,
      dtypes,
      deterministic: true,
      flags: ["mha.fastpathEnabled"],
      priority: 1,
      supports: (p) => {
        const open = gate(p);
        return open === true ? mhaFastPathSupports(p) : open;
      },
      run: mhaFastPath,
    },
    {
      op: "multiHeadAttention",
      name: `${prefix}slow-path`,
      device,
      dtypes,
      deterministic: true,
      priority: 0,
      supports: gate,
      run: mhaSlowPath,
    },
  ];
}
