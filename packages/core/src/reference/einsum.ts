/** Reference einsum: one loop nest over every index, float64 accumulation. */
import type { EinsumParams } from "../ops/einsum.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { output, reader, writer } from "./access.ts";

export function einsumReference(p: EinsumParams): Tensor {
  const { inputs, output: outLabels, sizes, operands } = p;
  const all = [...outLabels, ...Object.keys(sizes).filter((l) => !outLabels.includes(l))];
  const dims = all.map((l) => sizes[l]);
  const out = output(
    outLabels.map((l) => sizes[l]),
    p.dtype,
  );
  const W = writer(out);
  const readers = operands.map(reader);
  // Stride of each loop index in each operand (repeated labels add up: a diagonal).
  const strides = operands.map((t, oi) =>
    all.map((l) =>
      inputs[oi].reduce((s, x, d) => (x === l && t.shape[d] !== 1 ? s + t.strides[d] : s), 0),
    ),
  );
  const nOut = outLabels.length;
  const outCount = dims.slice(0, nOut).reduce((a, b) => a * b, 1);
  const sumCount = dims.slice(nOut).reduce((a, b) => a * b, 1);
  const idx = new Array<number>(all.length).fill(0);
  for (let o = 0; o < outCount; o++) {
    // Decode the output index into the leading loop counters.
    let rem = o;
    for (let d = nOut - 1; d >= 0; d--) {
      idx[d] = rem % dims[d];
      rem = Math.floor(rem / dims[d]);
    }
    let acc = 0;
    for (let s = 0; s < sumCount; s++) {
      let r = s;
      for (let d = all.length - 1; d >= nOut; d--) {
        idx[d] = r % dims[d];
        r = Math.floor(r / dims[d]);
      }
      let prod = 1;
      for (let oi = 0; oi < readers.length; oi++) {
        let pos = 0;
        const st = strides[oi];
        for (let d = 0; d < all.length; d++) pos += idx[d] * st[d];
        prod *= readers[oi](pos);
      }
      acc += prod;
    }
    W(o, acc);
  }
  return out;
}
