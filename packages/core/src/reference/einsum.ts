/**
 * Reference einsum: one loop nest over every index, float64 accumulation. As torch does,
 * an index only one operand holds (and the output does not) is summed within that operand
 * first: sum_j a_i b_j c_k is a_i (sum_j b_j) c_k, so an inf in a stays inf where the
 * loop nest alone would add inf * b_j of both signs into NaN. With an inf among three or
 * more operands the result can depend on the contraction order (torch's left-to-right
 * order, an opt_einsum path), which this one loop nest does not follow: "aa,,aa->" with a
 * scalar -inf is NaN in torch, -inf here.
 */
import { type EinsumParams, type LabelledDims, labelledDims } from "../ops/einsum.ts";
import { sizeOf, type Tensor } from "../tensor/tensor.ts";
import { batchOffsets, output, type Read, reader, writer } from "./access.ts";

/** An operand as its distinct indices (labelledDims) and a reader of its elements. */
interface Factor extends LabelledDims {
  read: Read;
}

const factorOf = (t: Tensor, labels: readonly string[]): Factor => ({
  read: reader(t),
  ...labelledDims(t, labels),
});

/** f with the indices in `sum` summed out, as a dense row-major factor. */
function sumOut(f: Factor, sum: ReadonlySet<string>): Factor {
  const keep = f.labels.flatMap((l, d) => (sum.has(l) ? [] : [d]));
  const drop = f.labels.flatMap((l, d) => (sum.has(l) ? [d] : []));
  const shape = keep.map((d) => f.shape[d]);
  const [at] = batchOffsets(shape, [keep.map((d) => f.strides[d])]);
  const [within] = batchOffsets(
    drop.map((d) => f.shape[d]),
    [drop.map((d) => f.strides[d])],
  );
  const sums = new Float64Array(at.length);
  for (let i = 0; i < at.length; i++) {
    let acc = 0;
    for (let j = 0; j < within.length; j++) acc += f.read(at[i] + within[j]);
    sums[i] = acc;
  }
  const strides = shape.map((_, d) => sizeOf(shape.slice(d + 1)));
  return { read: (pos) => sums[pos], labels: keep.map((d) => f.labels[d]), shape, strides };
}

/** The factors with each one's own indices (held by no other factor, not in the output) summed out. */
function sumOwnIndices(factors: Factor[], outLabels: readonly string[]): Factor[] {
  return factors.map((f, i) => {
    const own = f.labels.filter(
      (l) => !outLabels.includes(l) && factors.every((g, j) => j === i || !g.labels.includes(l)),
    );
    return own.length > 0 ? sumOut(f, new Set(own)) : f;
  });
}

export function einsumReference(p: EinsumParams): Tensor {
  const { inputs, output: outLabels, sizes, operands } = p;
  // The output first: the factors' readers are views of the CPU memory, which allocating
  // could grow (a plain memory's growth detaches older views).
  const out = output(
    outLabels.map((l) => sizes[l]),
    p.dtype,
  );
  const factors = sumOwnIndices(
    operands.map((t, i) => factorOf(t, inputs[i])),
    outLabels,
  );
  const summed = new Set(factors.flatMap((f) => f.labels).filter((l) => !outLabels.includes(l)));
  const all = [...outLabels, ...summed];
  const dims = all.map((l) => sizes[l]);
  const W = writer(out);
  // Stride of each loop index in each factor (0 where it broadcasts).
  const strides = factors.map((f) =>
    all.map((l) => (f.labels.includes(l) ? f.strides[f.labels.indexOf(l)] : 0)),
  );
  const nOut = outLabels.length;
  const outCount = sizeOf(dims.slice(0, nOut));
  const sumCount = sizeOf(dims.slice(nOut));
  // With nothing summed (a permutation, diagonal or outer product) the product is written
  // as is, so -0 stays -0 as in torch; a sum starts from +0, as torch's reductions do.
  const sumsNothing = inputs.every((labels) => labels.every((l) => outLabels.includes(l)));
  const idx = new Array<number>(all.length).fill(0);
  for (let o = 0; o < outCount; o++) {
    // Decode the output index into the leading loop counters.
    let rem = o;
    for (let d = nOut - 1; d >= 0; d--) {
      idx[d] = rem % dims[d];
      rem = Math.floor(rem / dims[d]);
    }
    let acc = sumsNothing ? -0 : 0;
    for (let s = 0; s < sumCount; s++) {
      let r = s;
      for (let d = all.length - 1; d >= nOut; d--) {
        idx[d] = r % dims[d];
        r = Math.floor(r / dims[d]);
      }
      let prod = 1;
      for (let fi = 0; fi < factors.length; fi++) {
        let pos = 0;
        const st = strides[fi];
        for (let d = 0; d < all.length; d++) pos += idx[d] * st[d];
        prod *= factors[fi].read(pos);
      }
      acc += prod;
    }
    W(o, acc);
  }
  return out;
}
