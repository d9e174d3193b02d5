/**
 * What every mps kernel shares: the helper's whole-buffer operands. The helper reads each
 * operand from byte 0, contiguously, so a view (an offset, a transpose, a broadcast, an
 * expanded batch) is first gathered into a fresh buffer by bp_mps_strided_copy.
 */
import { bytesPerElement, type DType, empty, type Tensor } from "@backplane/core";
import { contiguousStrides, sizeOf } from "@backplane/core/backend";
import type { BufferId } from "../helper.ts";
import type { MpsHandle } from "../memory.ts";
import { DTYPE, MAX_RANK } from "../native/abi.ts";
import { currentState } from "../state.ts";

export const FLOAT_DTYPES = ["float32", "float16", "bfloat16"] as const;

/** The helper's dtype code. */
export function dtypeCode(dtype: DType): number {
  return DTYPE[dtype as keyof typeof DTYPE];
}

export function handleOf(t: Tensor): MpsHandle {
  return t.storage.handle as MpsHandle;
}

/** Why the device cannot take this dtype, or true. */
export function dtypeSupport(dtype: DType): true | string {
  if (dtype === "bfloat16" && !currentState().device?.bfloat16)
    return "bfloat16 needs macOS 14+ (MPSGraph's bfloat16)";
  return true;
}

/** Why a layout cannot be gathered by the helper (rank, negative strides), or true. */
export function layoutSupport(
  name: string,
  rank: number,
  strides?: readonly number[],
): true | string {
  if (rank > MAX_RANK) return `${name} has ${rank} dims; the mps kernels take at most ${MAX_RANK}`;
  if (strides?.some((s) => s < 0)) return `${name} has a negative stride`;
  return true;
}

/** An operand as the helper wants it, and the temporary to drop afterwards (if any). */
export interface Operand {
  id: BufferId;
  temp?: Tensor;
}

function sameLayout(shape: readonly number[], strides: readonly number[]): boolean {
  const dense = contiguousStrides(shape);
  return shape.every((d, i) => d === 1 || strides[i] === dense[i]);
}

/**
 * `t`'s elements read as `shape` with `strides` (elements, from t.offset; 0 broadcasts),
 * as a dense buffer: t's own storage when it already is one, else a gathered copy.
 */
export function gather(t: Tensor, shape: readonly number[], strides: readonly number[]): Operand {
  if (t.offset === 0 && sameLayout(shape, strides)) return { id: handleOf(t).id };
  const temp = empty(shape as number[], { dtype: t.dtype, device: t.device });
  if (sizeOf(shape) > 0) {
    const h = handleOf(t);
    h.helper.stridedCopy(
      bytesPerElement(t.dtype),
      h.id,
      t.offset,
      shape,
      strides,
      handleOf(temp).id,
    );
  }
  return { id: handleOf(temp).id, temp };
}

/** `t` itself as a dense buffer. */
export function dense(t: Tensor): Operand {
  return gather(t, t.shape, t.strides);
}

/**
 * Runs `body`, which turns tensors into buffer ids with `take(operand)`; every temporary
 * taken is disposed afterwards, also when the body throws.
 */
export function withOperands<T>(body: (take: (o: Operand) => BufferId) => T): T {
  const temps: Tensor[] = [];
  try {
    return body((o) => {
      if (o.temp) temps.push(o.temp);
      return o.id;
    });
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * A new tensor of `shape` on `like`'s device, filled by `fill` (skipped when empty); the
 * tensor is disposed when `fill` throws.
 */
export function produce(
  shape: readonly number[],
  like: Tensor,
  fill: (out: Tensor) => void,
): Tensor {
  const out = empty(shape as number[], { dtype: like.dtype, device: like.device });
  if (out.numel === 0) return out;
  try {
    fill(out);
  } catch (e) {
    out.dispose();
    throw e;
  }
  return out;
}
