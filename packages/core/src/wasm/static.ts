/**
 * The static region of the CPU memory: [0, HEAP_BASE) holds the static data of WASM
 * kernel modules, each at the --memoryBase it was built with (its package's
 * wasm.config.json). A module claims the bytes its data segments occupy when it loads;
 * two modules whose data overlap are a RegistrationError naming both, so a third-party
 * backend picks a free range and joins without the core knowing it in advance.
 */
import { RegistrationError } from "../errors.ts";

/** Where the heap starts; below it, only module static data. */
export const HEAP_BASE = 65536;

interface Claim {
  owner: string;
  start: number;
  end: number;
}

const claims: Claim[] = [];

/** Claims [start, end) for `owner`; the same owner may claim its range again (a reload). */
export function claimStaticMemory(owner: string, start: number, end: number): void {
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start) {
    throw new RegistrationError(`${owner}: static data range [${start}, ${end}) is not valid`);
  }
  if (end > HEAP_BASE) {
    throw new RegistrationError(
      `${owner}: its static data ends at byte ${end}, past the static region (${HEAP_BASE} bytes); build it with a lower --memoryBase (wasm.config.json)`,
    );
  }
  if (start === end) return;
  for (const c of claims) {
    if (c.owner === owner) continue;
    if (start < c.end && c.start < end) {
      throw new RegistrationError(
        `${owner}: its static data [${start}, ${end}) overlaps ${c.owner}'s [${c.start}, ${c.end}); give one of them another memoryBase in its wasm.config.json (taken: ${staticClaims()
          .map((x) => `${x.owner} [${x.start}, ${x.end})`)
          .join(", ")})`,
      );
    }
  }
  const own = claims.findIndex((c) => c.owner === owner);
  if (own >= 0) claims.splice(own, 1);
  claims.push({ owner, start, end });
}

/** Every claim, by start address. */
export function staticClaims(): { owner: string; start: number; end: number }[] {
  return [...claims].sort((a, b) => a.start - b.start).map((c) => ({ ...c }));
}

/** [start, end) of a module's active data segments (offsets as i32.const), or undefined. */
export function dataExtent(bytes: Uint8Array): [number, number] | undefined {
  let p = 8; // magic + version
  const u32 = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[p++];
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) return result;
    }
  };
  const i32 = (): number => {
    let result = 0;
    let shift = 0;
    let b: number;
    do {
      b = bytes[p++];
      result |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    return shift < 32 && b & 0x40 ? result | (-1 << shift) : result;
  };
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  while (p < bytes.length) {
    const id = bytes[p++];
    const size = u32();
    const end = p + size;
    if (id === 11) {
      for (let n = u32(); n > 0; n--) {
        const flags = u32();
        if (flags === 1) {
          // Passive: copied at run time by memory.init, not placed in the static region.
          const len = u32();
          p += len;
          continue;
        }
        if (flags === 2) u32(); // memory index
        if (bytes[p++] !== 0x41)
          throw new RegistrationError("data segment offset is not an i32.const");
        const offset = i32();
        if (bytes[p++] !== 0x0b)
          throw new RegistrationError("data segment offset expression is malformed");
        const len = u32();
        p += len;
        lo = Math.min(lo, offset);
        hi = Math.max(hi, offset + len);
      }
    }
    p = end;
  }
  return lo <= hi ? [lo, hi] : undefined;
}
