/**
 * Runs a call with every CPU-memory allocation growing the memory first, to catch views
 * held across an allocation. On a plain (unshared) memory, as in a browser page that is not
 * cross-origin isolated, any growth detaches the views taken on the old buffer: writes
 * through one are lost, reads give undefined. The first allocation grows the memory by a
 * page (so `grew` says the buffer really changed), the others by 0 pages, which on a plain
 * memory detaches the buffer just as a real growth does, whatever the sizes.
 */
import { cpuMemory } from "@backplane/core/cpu";

export interface GrowingRun<T> {
  value: T;
  /** The CPU-memory allocations the call made. */
  allocations: number;
  /** Whether the memory's buffer grew during the call. */
  grew: boolean;
}

export function withGrowingMemory<T>(fn: () => T): GrowingRun<T> {
  const mem = cpuMemory();
  const allocate = mem.allocate;
  const before = mem.memory.buffer.byteLength;
  let allocations = 0;
  mem.allocate = (bytes: number) => {
    mem.memory.grow(allocations++ === 0 ? 1 : 0);
    return allocate.call(mem, bytes);
  };
  try {
    const value = fn();
    return { value, allocations, grew: mem.memory.buffer.byteLength > before };
  } finally {
    Reflect.deleteProperty(mem, "allocate"); // the class's own method again
  }
}
