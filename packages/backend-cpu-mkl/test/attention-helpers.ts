/** What the attention kernels' tests share: operand builders and poisoned allocations. */
import { type DType, randn, type Tensor } from "@backplane/core";
import { setAllocationHook } from "@backplane/core/backend";
import { randomTensor as R, type Rng } from "@backplane/testkit";

/** A view of t with its dims permuted; t's own reference is dropped. */
export const perm = (t: Tensor, dims: number[]) => {
  const v = t.permute(dims);
  t.dispose();
  return v;
};

/** Random query, key and value of these shapes (value: the key's shape unless given). */
export const qkv = (d: DType, r: Rng, q: number[], k: number[], v = k) =>
  [R(q, d, r), R(k, d, r), R(v, d, r)] as unknown[];

/** Seeded float32 normal samples. */
export const f32 = (shape: number[], seed: number) => randn(shape, { seed });

/** New allocations are filled with NaN bytes (as runConformance does), so unwritten or uninitialised reads show. */
export function poisoned<T>(fn: () => Promise<T>): Promise<T> {
  const prev = setAllocationHook((st) => {
    if (st.byteLength > 0) st.memory.upload(st.handle, 0, new Uint8Array(st.byteLength).fill(0xff));
  });
  return fn().finally(() => setAllocationHook(prev));
}
