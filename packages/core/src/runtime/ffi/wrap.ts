/**
 * Per-call conversions, generated only when a runtime needs one. When no argument and no
 * result needs converting, the runtime's own function is returned untouched, so hot calls
 * (BLAS through `buffer` arguments) pay nothing over the runtime's FFI cost.
 */

export type NativeFn = Function;
// biome-ignore lint/suspicious/noExplicitAny: a converter takes whatever the FFI layer hands it (numbers, bigints, pointers, buffers)
export type Convert = (value: any) => unknown;

/**
 * Returns `fn` itself when every conversion is null; otherwise a function of the same fixed
 * arity (no rest parameters, no array allocation) that converts the arguments that need it
 * and the result if it needs it.
 */
export function wrapNative(
  fn: NativeFn,
  argConverts: readonly (Convert | null)[],
  resultConvert: Convert | null,
): NativeFn {
  if (resultConvert === null && argConverts.every((c) => c === null)) return fn;
  const params = argConverts.map((_, i) => `a${i}`);
  const call = `f(${argConverts.map((c, i) => (c ? `c${i}(a${i})` : `a${i}`)).join(", ")})`;
  const body = `return function (${params.join(", ")}) { return ${resultConvert ? `r(${call})` : call}; };`;
  const factory = new Function("f", "r", ...argConverts.map((_, i) => `c${i}`), body) as (
    ...xs: unknown[]
  ) => NativeFn;
  return factory(fn, resultConvert, ...argConverts);
}

const encoder = new TextEncoder();

/** JS string -> NUL-terminated UTF-8 bytes; anything else is passed through. */
export function encodeCString(value: unknown): unknown {
  return typeof value === "string" ? encoder.encode(`${value}\0`) : value;
}

/** The most parameters {@link wrapByViews} dispatches on (2^6 = 64 call sites). */
export const MAX_VIEW_PARAMS = 6;

/**
 * Like {@link wrapNative}, but the native function is chosen per call by which parameters in
 * `viewParams` receive an ArrayBufferView: bit b of the mask is set when argument
 * `viewParams[b]` is a view. `bind(mask)` makes the binding for a mask (called once per mask,
 * on first use; mask 0 is `fn`). Every mask has its own call site, so each stays monomorphic
 * and keeps the runtime's fast-call path even when a program mixes views and pointers.
 */
export function wrapByViews(
  fn: NativeFn,
  bind: (mask: number) => NativeFn,
  viewParams: readonly number[],
  argConverts: readonly (Convert | null)[],
  resultConvert: Convert | null,
): NativeFn {
  if (viewParams.length > MAX_VIEW_PARAMS) {
    throw new RangeError(`wrapByViews: at most ${MAX_VIEW_PARAMS} view parameters`);
  }
  const params = argConverts.map((_, i) => `a${i}`).join(", ");
  const args = argConverts.map((c, i) => (c ? `c${i}(a${i})` : `a${i}`)).join(", ");
  const ret = (call: string) => (resultConvert ? `r(${call})` : call);
  const masks = Array.from({ length: 1 << viewParams.length }, (_, m) => m);
  const mask = viewParams.map((p, b) => `(v(a${p}) ? ${1 << b} : 0)`).join(" | ");
  const body = [
    "const v = ArrayBuffer.isView;",
    `let ${masks.map((m) => (m === 0 ? "f0 = f" : `f${m}`)).join(", ")};`,
    `return function (${params}) {`,
    `switch (${mask}) {`,
    ...masks.map((m) =>
      m === 0
        ? `default: return ${ret(`f0(${args})`)};`
        : `case ${m}: return ${ret(`(f${m} ??= bind(${m}))(${args})`)};`,
    ),
    "} };",
  ].join("\n");
  const factory = new Function("f", "bind", "r", ...argConverts.map((_, i) => `c${i}`), body) as (
    ...xs: unknown[]
  ) => NativeFn;
  return factory(fn, bind, resultConvert, ...argConverts);
}
