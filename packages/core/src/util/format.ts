/** Formats any user-supplied value for an error message; never throws (bigint, symbol, cycles...). */
export function show(value: unknown): string {
  try {
    if (typeof value === "string") return JSON.stringify(value);
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "symbol" || typeof value === "function") return String(value);
    if (value === null || value === undefined || typeof value !== "object") return String(value);
    const brief = tensorLike(value);
    if (brief) return brief;
    if (scalarsOnly(value, 8)) return `[${(value as unknown[]).map(show).join(",")}]`;
    return (
      JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}n` : v)) ??
      Object.prototype.toString.call(value)
    );
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * A value show() writes itself. Arrays of them are written element by element: JSON wrote
 * NaN and Infinity as null ("shape [null]" for a NaN size).
 */
const isScalar = (v: unknown): boolean =>
  v === null || v === undefined || (typeof v !== "object" && typeof v !== "function");

/** An array of scalars, or of such arrays, nested at most `depth` deep (a cycle is not). */
const scalarsOnly = (v: unknown, depth: number): boolean =>
  depth > 0 && Array.isArray(v) && v.every((x) => isScalar(x) || scalarsOnly(x, depth - 1));

/**
 * A tensor-like object (a Tensor, a QTensor: a dtype and a shape) in brief, as
 * "Tensor(float32, [2, 3])": written out as JSON it took screens (its storage's internals).
 */
function tensorLike(value: object): string | undefined {
  const v = value as { dtype?: unknown; shape?: unknown };
  if (typeof v.dtype !== "string" || !Array.isArray(v.shape)) return undefined;
  const name = value.constructor?.name || "tensor";
  return `${name}(${v.dtype}, [${v.shape.join(", ")}])`;
}
