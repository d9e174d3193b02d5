/** What the conformance and determinism runners share: walking op arguments and seeding cases. */
import { ArgumentError, Tensor } from "@backplane/core";
import { closest, getBackend, listBackends } from "@backplane/core/backend";

/** FNV-1a of a case's name: the per-case seed. */
export function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The arguments with each tensor (top level, or a value of an options object) replaced by f(t). */
export function mapTensors(args: unknown[], f: (t: Tensor) => Tensor): unknown[] {
  // One result per distinct tensor: one passed twice (self-attention's query, key and
  // value) stays one tensor, as ops that tell it apart (multiHeadAttention) need.
  const mapped = new Map<Tensor, Tensor>();
  const g = (t: Tensor) => {
    let m = mapped.get(t);
    if (!m) mapped.set(t, (m = f(t)));
    return m;
  };
  return args.map((a) => {
    if (a instanceof Tensor) return g(a);
    if (a && typeof a === "object" && !Array.isArray(a)) {
      return Object.fromEntries(
        Object.entries(a).map(([k, v]) => [k, v instanceof Tensor ? g(v) : v]),
      );
    }
    return a;
  });
}

/** Every tensor in a value (arrays and objects walked). */
export function tensorsIn(x: unknown): Tensor[] {
  if (x instanceof Tensor) return [x];
  if (Array.isArray(x)) return x.flatMap(tensorsIn);
  if (x && typeof x === "object") return Object.values(x).flatMap(tensorsIn);
  return [];
}

/** The registered backend named `name` (or whose package is `name`); else an ArgumentError. */
export function resolveBackend(
  who: string,
  name: unknown,
): NonNullable<ReturnType<typeof getBackend>> {
  const b =
    typeof name === "string"
      ? (getBackend(name) ?? listBackends().find((x) => x.def.packageName === name))
      : undefined;
  if (b) return b;
  const known = listBackends().map((x) =>
    x.def.packageName ? `${x.def.name} (${x.def.packageName})` : x.def.name,
  );
  const guess =
    typeof name === "string"
      ? closest(
          name,
          listBackends().map((x) => x.def.name),
        )
      : undefined;
  throw new ArgumentError(
    `${who}: no backend ${JSON.stringify(name)} is registered${guess ? `; did you mean ${guess}?` : ""}; import its package first. Registered: ${known.join(", ") || "none"}`,
  );
}

/**
 * Checks the ops/kernels filters against the backend's kernels: a misspelt name used to
 * match nothing, so the run reported 0 results and passed.
 */
export function checkFilters(
  who: string,
  backend: string,
  kernels: readonly { op: string; name: string }[],
  opts: { ops?: unknown; kernels?: unknown },
): void {
  for (const [key, known] of [
    ["ops", new Set(kernels.map((k) => k.op))],
    ["kernels", new Set(kernels.map((k) => k.name))],
  ] as const) {
    const given = opts[key];
    if (given === undefined) continue;
    if (!Array.isArray(given) || !given.every((x) => typeof x === "string"))
      throw new ArgumentError(`${who}: options.${key} must be an array of names`);
    for (const name of given) {
      if (known.has(name)) continue;
      const guess = closest(name, known);
      throw new ArgumentError(
        `${who}: backend ${backend} has no ${key === "ops" ? "kernel for op" : "kernel named"} ${JSON.stringify(name)}${guess ? `; did you mean ${guess}?` : ""} (it has: ${[...known].sort().join(", ") || "none"})`,
      );
    }
  }
}

/** Options must be an object (null and other values are user mistakes, not TypeErrors). */
export function checkOptions(who: string, opts: unknown): void {
  if (opts === null || typeof opts !== "object" || Array.isArray(opts))
    throw new ArgumentError(
      `${who}: options must be an object, got ${opts === null ? "null" : Array.isArray(opts) ? "an array" : typeof opts}`,
    );
}
