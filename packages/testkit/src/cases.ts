/**
 * The cases every backend runs: per op, typical shapes and the edges (size 1, primes,
 * empty dims, broadcasting, strided views), built from a seed so a failure can be replayed.
 */
import type { DType, Tensor } from "@backplane/core";
import { boolMask, maskRow, randomTensor as R, type Rng, spdTensor, withEvery } from "./random.ts";

export interface OpCase {
  /** A readable name of the shapes and options, e.g. "7x13 @ 13x5". */
  name: string;
  /** Builds the op's arguments (tensors on cpu; the runner moves them to the backend's device). */
  make(dtype: DType, rng: Rng): unknown[];
  /** How outputs are checked: elementwise against the reference, or by the decomposition's invariants. */
  check?: "elementwise" | "qr" | "eigh" | "svd";
  /** The case the doctor report runs for this op. */
  typical?: boolean;
  /** Output depends on a random stream a backend may draw differently (dropout): compared only on the reference. */
  sameRngOnly?: boolean;
}

/** multiHeadAttention's weights for embed dim E, scaled by 1/sqrt(E) (xavier-like: scores near 1). */
function mhaWeights(E: number, numHeads: number, bias: boolean, d: DType, r: Rng) {
  const s = E ** -0.5;
  return {
    inProjWeight: R([3 * E, E], d, r, s),
    inProjBias: bias ? R([3 * E], d, r) : null,
    outProjWeight: R([E, E], d, r, s),
    outProjBias: bias ? R([E], d, r) : null,
    numHeads,
  };
}

/** The transposed view of x; x itself is disposed (the view holds the storage), else it leaked until GC. */
const T = (x: Tensor) => {
  const view = x.transpose(-2, -1);
  x.dispose();
  return view;
};

export const CASES: Record<string, OpCase[]> = {
  matmul: [
    { name: "1x1 @ 1x1", make: (d, r) => [R([1, 1], d, r), R([1, 1], d, r)] },
    { name: "7x13 @ 13x5", make: (d, r) => [R([7, 13], d, r), R([13, 5], d, r)] },
    {
      name: "64x64 @ 64x64",
      typical: true,
      make: (d, r) => [R([64, 64], d, r), R([64, 64], d, r)],
    },
    { name: "33x97 @ 97x31", make: (d, r) => [R([33, 97], d, r), R([97, 31], d, r)] },
    { name: "0x3 @ 3x4 (empty)", make: (d, r) => [R([0, 3], d, r), R([3, 4], d, r)] },
    { name: "3x0 @ 0x4 (k = 0)", make: (d, r) => [R([3, 0], d, r), R([0, 4], d, r)] },
    { name: "vector . vector", make: (d, r) => [R([11], d, r), R([11], d, r)] },
    { name: "vector @ 11x3", make: (d, r) => [R([11], d, r), R([11, 3], d, r)] },
    { name: "5x11 @ vector", make: (d, r) => [R([5, 11], d, r), R([11], d, r)] },
    { name: "batched 3x5x7 @ 7x2", make: (d, r) => [R([3, 5, 7], d, r), R([7, 2], d, r)] },
    {
      name: "broadcast 2x1x3x4 @ 5x4x2",
      make: (d, r) => [R([2, 1, 3, 4], d, r), R([5, 4, 2], d, r)],
    },
    {
      name: "transposed views (13x7)^T @ (5x13)^T",
      make: (d, r) => [T(R([13, 7], d, r)), T(R([5, 13], d, r))],
    },
  ],
  add: [
    { name: "17 + 17", make: (d, r) => [R([17], d, r), R([17], d, r)] },
    { name: "3x1x5 + 4x1 (broadcast)", make: (d, r) => [R([3, 1, 5], d, r), R([4, 1], d, r)] },
    { name: "0x3 + 3 (empty)", make: (d, r) => [R([0, 3], d, r), R([3], d, r)] },
    { name: "transposed 5x7 + 7x5", make: (d, r) => [T(R([5, 7], d, r)), R([7, 5], d, r)] },
  ],
  mul: [
    { name: "1 * 1", make: (d, r) => [R([1], d, r), R([1], d, r)] },
    { name: "2x3x4 * 4", typical: true, make: (d, r) => [R([2, 3, 4], d, r), R([4], d, r)] },
    { name: "0 * 1 (empty)", make: (d, r) => [R([0], d, r), R([1], d, r)] },
  ],
  relu: [
    { name: "31", make: (d, r) => [R([31], d, r)] },
    { name: "2x0 (empty)", make: (d, r) => [R([2, 0], d, r)] },
    { name: "transposed 3x5", make: (d, r) => [T(R([5, 3], d, r))] },
  ],
  gelu: [
    { name: "97", make: (d, r) => [R([97], d, r, 3)] },
    { name: "97 tanh", make: (d, r) => [R([97], d, r, 3), { approximate: "tanh" }] },
    { name: "1", make: (d, r) => [R([1], d, r)] },
  ],
  softmax: [
    { name: "7x13 dim -1", make: (d, r) => [R([7, 13], d, r), -1] },
    { name: "7x13 dim 0", make: (d, r) => [R([7, 13], d, r), 0] },
    { name: "large logits 3x101", make: (d, r) => [R([3, 101], d, r, 40), -1] },
    { name: "1", make: (d, r) => [R([1], d, r), 0] },
    { name: "3x0 (empty)", make: (d, r) => [R([3, 0], d, r), -1] },
    // One answer per op at the edges: a 0-d input (1), masked logits (-Infinity: 0).
    { name: "0-d", make: (d, r) => [R([], d, r), -1] },
    {
      name: "4x9 with -Infinity logits",
      make: (d, r) => [withEvery(R([4, 9], d, r), 1, 4, Number.NEGATIVE_INFINITY), -1],
    },
  ],
  logSoftmax: [
    { name: "5x17 dim -1", make: (d, r) => [R([5, 17], d, r), -1] },
    { name: "2x3x5 dim 1", make: (d, r) => [R([2, 3, 5], d, r, 10), 1] },
    { name: "0-d", make: (d, r) => [R([], d, r), -1] },
    {
      name: "4x9 with -Infinity logits",
      make: (d, r) => [withEvery(R([4, 9], d, r), 1, 4, Number.NEGATIVE_INFINITY), -1],
    },
  ],
  conv2d: [
    { name: "1x3x7x7 * 5x3x3x3", make: (d, r) => [R([1, 3, 7, 7], d, r), R([5, 3, 3, 3], d, r)] },
    {
      name: "stride 2, padding 1, bias",
      make: (d, r) => [
        R([2, 4, 11, 13], d, r),
        R([6, 4, 3, 3], d, r),
        { stride: 2, padding: 1, bias: R([6], d, r) },
      ],
    },
    {
      name: "dilation 2",
      make: (d, r) => [R([1, 2, 9, 9], d, r), R([3, 2, 3, 3], d, r), { dilation: 2 }],
    },
    {
      name: "groups 2",
      make: (d, r) => [R([1, 4, 6, 5], d, r), R([6, 2, 3, 3], d, r), { groups: 2, padding: 1 }],
    },
    {
      name: "depthwise 3x3",
      make: (d, r) => [R([1, 8, 7, 7], d, r), R([8, 1, 3, 3], d, r), { groups: 8, padding: 1 }],
    },
    { name: "1x1", make: (d, r) => [R([1, 16, 5, 5], d, r), R([7, 16, 1, 1], d, r)] },
    {
      name: "5x5 padding same",
      make: (d, r) => [R([1, 3, 8, 8], d, r), R([4, 3, 5, 5], d, r), { padding: "same" }],
    },
    {
      name: "7x7 stride 2 padding 3",
      make: (d, r) => [R([1, 3, 17, 17], d, r), R([8, 3, 7, 7], d, r), { stride: 2, padding: 3 }],
    },
    { name: "1x1 input", make: (d, r) => [R([1, 1, 1, 1], d, r), R([1, 1, 1, 1], d, r)] },
  ],
  scaledDotProductAttention: [
    {
      name: "1x2x7x16",
      make: (d, r) => [R([1, 2, 7, 16], d, r), R([1, 2, 7, 16], d, r), R([1, 2, 7, 16], d, r)],
    },
    {
      name: "causal L=S=13",
      make: (d, r) => [
        R([2, 13, 8], d, r),
        R([2, 13, 8], d, r),
        R([2, 13, 8], d, r),
        { isCausal: true },
      ],
    },
    {
      name: "bool mask",
      make: (d, r) => [
        R([2, 5, 8], d, r),
        R([2, 11, 8], d, r),
        R([2, 11, 4], d, r),
        { attnMask: boolMask([5, 11], r) },
      ],
    },
    {
      name: "additive mask",
      make: (d, r) => [
        R([1, 3, 5, 8], d, r),
        R([1, 3, 6, 8], d, r),
        R([1, 3, 6, 8], d, r),
        { attnMask: R([5, 6], d, r) },
      ],
    },
    {
      name: "bool mask, one row fully masked (0, as PyTorch 2.13)",
      make: (d, r) => [
        R([2, 5, 8], d, r),
        R([2, 11, 8], d, r),
        R([2, 11, 4], d, r),
        { attnMask: maskRow(boolMask([5, 11], r), 2) },
      ],
    },
    {
      name: "additive mask, one row all -Infinity (0, as PyTorch 2.13)",
      make: (d, r) => [
        R([1, 3, 5, 8], d, r),
        R([1, 3, 6, 8], d, r),
        R([1, 3, 6, 8], d, r),
        { attnMask: maskRow(R([5, 6], d, r), 0) },
      ],
    },
    {
      // softmax of a row with a +inf score is NaN (inf - inf), as in PyTorch's math path.
      name: "additive mask, +Infinity at one key (its row NaN)",
      make: (d, r) => [
        R([1, 2, 5, 8], d, r),
        R([1, 2, 6, 8], d, r),
        R([1, 2, 6, 8], d, r),
        { attnMask: withEvery(R([5, 6], d, r), 7, 30, Number.POSITIVE_INFINITY) },
      ],
    },
    {
      name: "GQA 4 query heads, 2 kv heads",
      make: (d, r) => [
        R([1, 4, 6, 8], d, r),
        R([1, 2, 9, 8], d, r),
        R([1, 2, 9, 8], d, r),
        { enableGqa: true },
      ],
    },
    {
      // Past one 64 x 64 tile both ways, odd sizes (the tiled GPU kernels' edges).
      name: "1x2x100x64, S=77",
      make: (d, r) => [R([1, 2, 100, 64], d, r), R([1, 2, 77, 64], d, r), R([1, 2, 77, 64], d, r)],
    },
    {
      name: "causal 130x70, head dim 128",
      make: (d, r) => [
        R([1, 1, 130, 128], d, r),
        R([1, 1, 70, 128], d, r),
        R([1, 1, 70, 128], d, r),
        { isCausal: true },
      ],
    },
    {
      name: "L=1",
      make: (d, r) => [R([1, 1, 1, 16], d, r), R([1, 1, 29, 16], d, r), R([1, 1, 29, 16], d, r)],
    },
    {
      name: "S=1, scale 0.5",
      make: (d, r) => [R([3, 4, 8], d, r), R([3, 1, 8], d, r), R([3, 1, 8], d, r), { scale: 0.5 }],
    },
    {
      name: "dropout 0.3 seed 7",
      sameRngOnly: true,
      make: (d, r) => [
        R([1, 5, 8], d, r),
        R([1, 5, 8], d, r),
        R([1, 5, 8], d, r),
        { dropoutP: 0.3, seed: 7 },
      ],
    },
    {
      name: "dropout 0.2 seed 5, 70 x 70, head dim 64",
      sameRngOnly: true,
      make: (d, r) => [
        R([1, 70, 64], d, r),
        R([1, 70, 64], d, r),
        R([1, 70, 64], d, r),
        { dropoutP: 0.2, seed: 5 },
      ],
    },
  ],
  multiHeadAttention: [
    {
      // One tensor for query, key and value: the fast path's packed in-projection.
      name: "self-attention B=2 L=7 E=24, 3 heads, biases",
      typical: true,
      make: (d, r) => {
        const x = R([2, 7, 24], d, r);
        return [x, x, x, mhaWeights(24, 3, true, d, r)];
      },
    },
    {
      name: "cross-attention unbatched L=5 S=13 E=16, 4 heads",
      make: (d, r) => [
        R([5, 16], d, r),
        R([13, 16], d, r),
        R([13, 16], d, r),
        mhaWeights(16, 4, true, d, r),
      ],
    },
    {
      name: "causal self-attention L=9 E=16, 2 heads, no biases",
      make: (d, r) => {
        const x = R([2, 9, 16], d, r);
        return [x, x, x, { ...mhaWeights(16, 2, false, d, r), isCausal: true }];
      },
    },
    {
      name: "bool mask, one head, S=11",
      make: (d, r) => [
        R([1, 6, 8], d, r),
        R([1, 11, 8], d, r),
        R([1, 11, 8], d, r),
        { ...mhaWeights(8, 1, true, d, r), attnMask: boolMask([6, 11], r) },
      ],
    },
    {
      name: "additive mask, B=3, 2 heads",
      make: (d, r) => [
        R([3, 4, 12], d, r),
        R([3, 5, 12], d, r),
        R([3, 5, 12], d, r),
        { ...mhaWeights(12, 2, true, d, r), attnMask: R([4, 5], d, r) },
      ],
    },
    {
      name: "L=1, S=1",
      make: (d, r) => [
        R([1, 8], d, r),
        R([1, 8], d, r),
        R([1, 8], d, r),
        mhaWeights(8, 2, true, d, r),
      ],
    },
    {
      // torch's kdim/vdim: separate in-projections, the bias still packed.
      name: "separate projections, kdim 5, vdim 3",
      make: (d, r) => {
        const { inProjWeight, ...rest } = mhaWeights(8, 2, true, d, r);
        inProjWeight.dispose();
        return [
          R([2, 4, 8], d, r),
          R([2, 6, 5], d, r),
          R([2, 6, 3], d, r),
          {
            ...rest,
            qProjWeight: R([8, 8], d, r, 8 ** -0.5),
            kProjWeight: R([8, 5], d, r, 5 ** -0.5),
            vProjWeight: R([8, 3], d, r, 3 ** -0.5),
          },
        ];
      },
    },
  ],
  einsum: [
    { name: "ij,jk->ik", make: (d, r) => ["ij,jk->ik", R([5, 7], d, r), R([7, 3], d, r)] },
    { name: "ii->i (diagonal)", make: (d, r) => ["ii->i", R([6, 6], d, r)] },
    { name: "ii (trace)", make: (d, r) => ["ii", R([5, 5], d, r)] },
    {
      name: "bij,bjk->bik",
      make: (d, r) => ["bij,bjk->bik", R([2, 3, 4], d, r), R([2, 4, 5], d, r)],
    },
    {
      name: "...ij,...jk (ellipsis broadcast)",
      make: (d, r) => ["...ij,...jk", R([2, 1, 3, 4], d, r), R([5, 4, 2], d, r)],
    },
    { name: "i,j->ij (outer)", make: (d, r) => ["i,j->ij", R([4], d, r), R([3], d, r)] },
    { name: "ijk->kji", make: (d, r) => ["ijk->kji", R([2, 3, 4], d, r)] },
    {
      name: "ab,bc,cd->ad (3 operands)",
      make: (d, r) => ["ab,bc,cd->ad", R([3, 4], d, r), R([4, 5], d, r), R([5, 2], d, r)],
    },
    { name: "i...->... (sum first dim)", make: (d, r) => ["i...->...", R([3, 2, 1], d, r)] },
    {
      name: "ij,ij->ij with size-1 broadcast",
      make: (d, r) => ["ij,ij->ij", R([3, 1], d, r), R([3, 4], d, r)],
    },
  ],
  cholesky: [
    { name: "1x1", make: (d, r) => [spdTensor([], 1, d, r)] },
    { name: "7x7", typical: true, make: (d, r) => [spdTensor([], 7, d, r)] },
    { name: "batch 3 of 16x16", make: (d, r) => [spdTensor([3], 16, d, r)] },
    { name: "upper 5x5", make: (d, r) => [spdTensor([], 5, d, r), { upper: true }] },
  ],
  inv: [
    { name: "1x1", make: (d, r) => [R([1, 1], d, r)] },
    { name: "13x13", typical: true, make: (d, r) => [spdTensor([], 13, d, r)] },
    { name: "batch 2 of 5x5", make: (d, r) => [spdTensor([2], 5, d, r)] },
  ],
  solve: [
    { name: "7x7, B 7x3", make: (d, r) => [spdTensor([], 7, d, r), R([7, 3], d, r)] },
    { name: "7x7, b vector", make: (d, r) => [spdTensor([], 7, d, r), R([7], d, r)] },
    {
      name: "batch 2 of 4x4, B 2x4x2",
      make: (d, r) => [spdTensor([2], 4, d, r), R([2, 4, 2], d, r)],
    },
  ],
  luFactor: [
    { name: "1x1", make: (d, r) => [R([1, 1], d, r)] },
    { name: "11x11", typical: true, make: (d, r) => [R([11, 11], d, r)] },
    { name: "batch 2 of 6x6", make: (d, r) => [R([2, 6, 6], d, r)] },
  ],
  qr: [
    { name: "7x5", typical: true, check: "qr", make: (d, r) => [R([7, 5], d, r)] },
    { name: "5x7", check: "qr", make: (d, r) => [R([5, 7], d, r)] },
    { name: "7x5 complete", check: "qr", make: (d, r) => [R([7, 5], d, r), { mode: "complete" }] },
    { name: "1x1", check: "qr", make: (d, r) => [R([1, 1], d, r)] },
  ],
  eigh: [
    { name: "1x1", check: "eigh", make: (d, r) => [spdTensor([], 1, d, r)] },
    { name: "13x13", typical: true, check: "eigh", make: (d, r) => [spdTensor([], 13, d, r)] },
    { name: "batch 2 of 6x6", check: "eigh", make: (d, r) => [spdTensor([2], 6, d, r)] },
  ],
  svd: [
    {
      name: "7x5",
      typical: true,
      check: "svd",
      make: (d, r) => [R([7, 5], d, r), { fullMatrices: false }],
    },
    { name: "5x7 full", check: "svd", make: (d, r) => [R([5, 7], d, r)] },
    { name: "1x1", check: "svd", make: (d, r) => [R([1, 1], d, r)] },
  ],
  fft: [
    { name: "16 complex", make: (d, r) => [R([16, 2], d, r)] },
    { name: "13 complex (prime)", make: (d, r) => [R([13, 2], d, r)] },
    { name: "dim 0 of 5x8, n = 7", make: (d, r) => [R([5, 8, 2], d, r), { dim: 0, n: 7 }] },
    { name: "ortho", make: (d, r) => [R([3, 12, 2], d, r), { norm: "ortho" }] },
  ],
  ifft: [
    { name: "16 complex", make: (d, r) => [R([16, 2], d, r)] },
    { name: "forward norm, 9", make: (d, r) => [R([9, 2], d, r), { norm: "forward" }] },
  ],
  rfft: [
    { name: "16", make: (d, r) => [R([16], d, r)] },
    { name: "15", make: (d, r) => [R([15], d, r)] },
    { name: "1", make: (d, r) => [R([1], d, r)] },
    { name: "4x10 dim 0", make: (d, r) => [R([4, 10], d, r), { dim: 0 }] },
  ],
  irfft: [
    { name: "9 bins -> 16", make: (d, r) => [R([9, 2], d, r)] },
    { name: "8 bins -> n = 15", make: (d, r) => [R([8, 2], d, r), { n: 15 }] },
  ],
};

/** A smaller set for the doctor report: one typical case per op. */
export function sampleCase(op: string): OpCase | undefined {
  const list = CASES[op];
  return (
    list?.find((c) => c.typical) ??
    list?.find((c) => !c.sameRngOnly && !c.name.includes("empty")) ??
    list?.[0]
  );
}
