/** Formats any user-supplied value for an error message; never throws (bigint, symbol, cycles...). */
export function show(value: unknown): string {
  try {
    if (typeof value === "string") return JSON.stringify(value);
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "symbol" || typeof value === "function") return String(value);
    if (value === null || value === undefined || typeof value !== "object") return String(value);
    return (
      JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}n` : v)) ??
      Object.prototype.toString.call(value)
    );
  } catch {
    return Object.prototype.toString.call(value);
  }
}
