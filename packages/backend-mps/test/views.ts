/** Device-side views for the tests: the same storage seen with other strides and offset. */
import { Tensor } from "@backplane/core";

export function view(
  t: Tensor,
  shape: readonly number[],
  strides: readonly number[],
  offset = 0,
): Tensor {
  t.storage.retain();
  return new Tensor(t.storage, t.dtype, shape, strides, offset);
}
