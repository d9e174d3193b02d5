/** What the conformance and determinism runners share: walking op arguments and seeding cases. */
import { Tensor } from "@backplane/core";

/** FNV-1a of a case's name: the per-case seed. */
export function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The arguments with each tensor (top level, or a value of an options object) replaced by f(t). */
export function mapTensors(args: unknown[], f: (t: Tensor) => Tensor): unknown[] {
  return args.map((a) => {
    if (a instanceof Tensor) return f(a);
    if (a && typeof a === "object" && !Array.isArray(a)) {
      return Object.fromEntries(
        Object.entries(a).map(([k, v]) => [k, v instanceof Tensor ? f(v) : v]),
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
