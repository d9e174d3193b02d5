/** Argument checks shared by every op: each failure names the argument and what was expected. */

import { ArgumentError, DeviceError, DTypeError, LinalgError, ShapeError } from "../errors.ts";
import { type DType, isFloat } from "../tensor/dtype.ts";
import { allFinite, TENSOR_BRAND, Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { version } from "../version.ts";

export function checkTensor(op: string, name: string, x: unknown): Tensor {
  if (!(x instanceof Tensor)) {
    const madeBy = typeof x === "object" && x !== null ? Reflect.get(x, TENSOR_BRAND) : undefined;
    if (typeof madeBy === "string")
      throw new ArgumentError(
        `${op}: ${name} is a Tensor of another copy of @backplane/core (version ${madeBy}; this copy is ${version}), and tensors cannot pass between copies that did not join: run npm dedupe so one copy remains`,
      );
    const got = x === null ? "null" : Array.isArray(x) ? "an array" : typeof x;
    throw new ArgumentError(
      `${op}: ${name} must be a Tensor, got ${got} (wrap data with tensor(...))`,
    );
  }
  x.assertAlive(name, op);
  return x;
}

export function checkFloat(op: string, name: string, t: Tensor): void {
  if (!isFloat(t.dtype)) {
    throw new DTypeError(
      `${op}: ${name} has dtype ${t.dtype}; expected a floating dtype (float32, float64, float16, bfloat16)`,
    );
  }
}

/**
 * Linear algebra takes finite input only. The iterative factorizations (eigh, svd) never
 * converge on NaN or infinity (LAPACK's gesdd looped at 100% CPU for minutes on one), and
 * the direct ones (inv, solve, LU, QR, Cholesky) spread them differently in each library's
 * pivoting. One pass over host-visible input, cheap next to the factorization, gives every
 * kernel the same answer: a LinalgError. (Device memory is not read here.)
 */
export function checkFiniteLinalg(op: string, name: string, t: Tensor): void {
  if (allFinite(t)) return;
  throw new LinalgError(
    op,
    `${name} contains NaN or infinity; linear algebra takes finite input only`,
  );
}

export function checkDTypeIn(op: string, name: string, t: Tensor, allowed: readonly DType[]): void {
  if (!allowed.includes(t.dtype)) {
    throw new DTypeError(
      `${op}: ${name} has dtype ${t.dtype}; expected one of ${allowed.join(", ")}`,
    );
  }
}

export function checkSame(op: string, names: string[], ts: Tensor[]): void {
  for (let i = 1; i < ts.length; i++) {
    if (ts[i].device !== ts[0].device) {
      throw new DeviceError(
        `${op}: ${names[i]} is on ${ts[i].device} but ${names[0]} is on ${ts[0].device}; move them to one device with .to()`,
      );
    }
    if (ts[i].dtype !== ts[0].dtype) {
      throw new DTypeError(
        `${op}: ${names[i]} has dtype ${ts[i].dtype} but ${names[0]} has ${ts[0].dtype}; they must match (no implicit promotion)`,
      );
    }
  }
}

export function checkRank(op: string, name: string, t: Tensor, min: number, max = min): void {
  if (t.rank < min || t.rank > max) {
    const want =
      min === max
        ? `${min}`
        : max === Number.POSITIVE_INFINITY
          ? `at least ${min}`
          : `${min} to ${max}`;
    throw new ShapeError(`${op}: ${name} must have rank ${want}, got shape [${t.shape}]`);
  }
}

/** numpy broadcasting of two shapes. */
export function broadcastShapes(
  op: string,
  a: readonly number[],
  b: readonly number[],
  names = ["a", "b"],
): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) {
      throw new ShapeError(
        `${op}: shapes of ${names[0]} [${a}] and ${names[1]} [${b}] do not broadcast (size ${x} vs ${y} at dim ${i - n})`,
      );
    }
    out[i] = x === 1 ? y : x;
  }
  return out;
}

export function checkInt(
  op: string,
  name: string,
  v: unknown,
  min = Number.NEGATIVE_INFINITY,
): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min) {
    throw new ArgumentError(
      `${op}: ${name} must be an integer${min > Number.NEGATIVE_INFINITY ? ` >= ${min}` : ""}, got ${show(v)}`,
    );
  }
  return v;
}

export function checkNumber(
  op: string,
  name: string,
  v: unknown,
  lo = Number.NEGATIVE_INFINITY,
  hi = Number.POSITIVE_INFINITY,
): number {
  if (typeof v !== "number" || Number.isNaN(v) || v < lo || v > hi) {
    throw new ArgumentError(`${op}: ${name} must be a number in [${lo}, ${hi}], got ${show(v)}`);
  }
  return v;
}

export function checkOptions(
  op: string,
  opts: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== "object" || Array.isArray(opts) || opts instanceof Tensor) {
    throw new ArgumentError(`${op}: options must be an object, got ${show(opts)}`);
  }
  for (const k of Object.keys(opts)) {
    if (!allowed.includes(k))
      throw new ArgumentError(`${op}: unknown option ${show(k)}; known: ${allowed.join(", ")}`);
  }
  return opts as Record<string, unknown>;
}

/** An optional boolean option: undefined gives the default; anything but a boolean is an error. */
export function checkBool(op: string, name: string, v: unknown, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  if (typeof v !== "boolean")
    throw new ArgumentError(`${op}: ${name} must be a boolean, got ${show(v)}`);
  return v;
}

/**
 * `from` must broadcast *to* `to` without changing it (a mask onto the scores): no more
 * dims, and each dim 1 or equal. numpy broadcasting both ways would let a mask with extra
 * leading dims silently grow the result.
 */
export function checkBroadcastsTo(
  op: string,
  name: string,
  from: readonly number[],
  to: readonly number[],
  toName: string,
): void {
  const ok =
    from.length <= to.length &&
    from.every((d, i) => d === 1 || d === to[to.length - from.length + i]);
  if (!ok) {
    throw new ShapeError(
      `${op}: ${name} of shape [${from}] does not broadcast to ${toName} [${to}] (each of its dims must be 1 or match, and it may not have more dims)`,
    );
  }
}
