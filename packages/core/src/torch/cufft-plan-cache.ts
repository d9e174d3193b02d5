/**
 * torch.backends.cuda.cufft_plan_cache: one cache per device, indexed (cufftPlanCache[1])
 * or bare (the current device). The core's slots hold nothing (no cuFFT without
 * backend-cuda); any member it does not have, or a bad index, is a typed error.
 */
import { ArgumentError } from "../errors.ts";
import { PROBES } from "../namespaces/namespace.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";

/** torch.backends.cuda.cufft_plan_cache[i]: backend-cuda installs the real caches. */
export interface CufftPlanCache {
  readonly size: number;
  maxSize: number;
  clear(): void;
}

class PlanCacheSlot implements CufftPlanCache {
  private max = 4096;
  constructor(readonly device: number) {}
  get size(): number {
    return 0; // no cuFFT without backend-cuda: nothing is ever cached
  }
  get maxSize(): number {
    return this.max;
  }
  set maxSize(n: number) {
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
      throw new ArgumentError(`cufftPlanCache.maxSize must be an integer >= 0, got ${show(n)}`);
    this.max = n;
  }
  clear(): void {}
}

const MEMBERS = ["size", "maxSize", "clear"];

/** `cufftPlanCache.x`, read or written, is not a member: a typed error with the closest name. */
function noMember(path: string, prop: string): ArgumentError {
  const guess = didYouMean(prop, MEMBERS);
  return new ArgumentError(
    `${path}.${prop}: no such member${guess ? `; did you mean ${guess}?` : ""} (size, maxSize, clear())`,
  );
}

/**
 * One device's cache as users see it: writing size (read-only, as in torch) or any name
 * but maxSize is an ArgumentError, not a TypeError or a property added by a typo.
 */
function guarded(s: PlanCacheSlot, path: string): PlanCacheSlot {
  return new Proxy(s, {
    get(t, prop, receiver) {
      if (typeof prop === "symbol" || prop in t || PROBES.has(prop))
        return Reflect.get(t, prop, receiver);
      throw noMember(path, prop);
    },
    set(t, prop, value) {
      if (prop === "maxSize") {
        t.maxSize = value;
        return true;
      }
      if (typeof prop === "string" && !MEMBERS.includes(prop)) throw noMember(path, prop);
      throw new ArgumentError(`${path}.${String(prop)} is read-only; maxSize is the one setting`);
    },
  });
}

/**
 * Indexing picks a device; bare use (size, maxSize, clear) means device 0 until
 * backend-cuda says otherwise. Any other member, or a bad index, is a typed error.
 */
export function planCacheRegistry(): CufftPlanCache & { [device: number]: CufftPlanCache } {
  const slots = new Map<number, PlanCacheSlot>();
  const slot = (d: number) => {
    if (!Number.isInteger(d) || d < 0 || d > 1023)
      throw new ArgumentError(
        `cufftPlanCache[${String(d)}]: the device index must be an integer in [0, 1023]`,
      );
    let s = slots.get(d);
    if (!s) slots.set(d, (s = guarded(new PlanCacheSlot(d), `cufftPlanCache[${d}]`)));
    return s;
  };
  return new Proxy({} as CufftPlanCache & { [device: number]: CufftPlanCache }, {
    get(_, prop) {
      if (typeof prop === "symbol" || PROBES.has(prop)) return undefined;
      if (/^-?\d+(\.\d+)?$/.test(prop) || prop === "NaN" || prop === "Infinity")
        return slot(Number(prop));
      const cur = slot(0);
      if (prop === "clear") return () => cur.clear();
      if (prop === "size" || prop === "maxSize") return cur[prop];
      const guess = didYouMean(prop, MEMBERS);
      throw new ArgumentError(
        `cufftPlanCache.${prop}: no such member${guess ? `; did you mean ${guess}?` : ""} (index a device, cufftPlanCache[0], or use size, maxSize, clear())`,
      );
    },
    has(_, prop) {
      return MEMBERS.includes(prop as string) || (typeof prop === "string" && /^\d+$/.test(prop));
    },
    set(_, prop, value) {
      if (prop === "maxSize") {
        slot(0).maxSize = value;
        return true;
      }
      throw new ArgumentError(
        `cufftPlanCache.${String(prop)} is read-only; maxSize is the one setting`,
      );
    },
  });
}
