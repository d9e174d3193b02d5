/**
 * The weight-transform cache (NNPACK's "precompute" transform strategy for inference):
 * Winograd and FFT kernels keep the transformed weights U of recent weight tensors, as
 * tfjs-wasm keeps XNNPACK's packed filters. An entry is found by the weight's storage,
 * offset, shape and the algorithm, and is used only if the weights are byte-for-byte what
 * they were when U was made (a SIMD compare against a copy, far cheaper than the
 * transform), so a tensor changed in place, or a new tensor at a reused address, gets a
 * fresh transform. Least recently used entries go first once the limit is passed.
 */
import { ArgumentError, bytesPerElement, empty, type Tensor } from "@backplane/core";
import type { NnpackTransformCacheInfo } from "@backplane/core/backend";
import { addressOf, cpuMemory } from "@backplane/core/cpu";
import { conv } from "./wasm.ts";

interface Entry {
  /** Copy of the weights U was made from (in the CPU memory). */
  copy: number;
  weightBytes: number;
  u: Tensor;
  bytes: number;
}

const entries = new Map<string, Entry>();
let limitBytes = 256 * 2 ** 20;
let enabled = true;
let totalBytes = 0;
let hits = 0;
let misses = 0;

function drop(key: string, e: Entry): void {
  entries.delete(key);
  cpuMemory().free(e.copy);
  e.u.dispose();
  totalBytes -= e.bytes;
}

function evict(keep: string): void {
  for (const [key, e] of entries) {
    if (totalBytes <= limitBytes) return;
    if (key !== keep) drop(key, e);
  }
}

export interface Transformed {
  u: Tensor;
  /** Disposes u when it is not held by the cache. */
  release(): void;
}

/**
 * The transform of contiguous weights `w` for `algorithm` into a float32 tensor of
 * `shape`, from the cache or made by `fill(u)`.
 */
export function transformedWeights(
  algorithm: string,
  w: Tensor,
  shape: number[],
  fill: (u: Tensor) => void,
): Transformed {
  if (!enabled) {
    const u = empty(shape, { dtype: "float32" });
    fill(u);
    return { u, release: () => u.dispose() };
  }
  const weightBytes = w.numel * bytesPerElement(w.dtype);
  const ptr = addressOf(w);
  const key = `${algorithm}|${w.storage.handle as number}|${w.offset}|${w.shape.join("x")}|${shape.join("x")}`;
  const e = entries.get(key);
  if (e) {
    if (e.weightBytes === weightBytes && conv().equal_bytes(e.copy, ptr, weightBytes) === 1) {
      hits++;
      entries.delete(key); // most recently used goes last
      entries.set(key, e);
      return { u: e.u, release() {} };
    }
    drop(key, e);
  }
  misses++;
  const u = empty(shape, { dtype: "float32" });
  fill(u);
  const bytes = u.numel * 4 + weightBytes;
  if (bytes > limitBytes) return { u, release: () => u.dispose() };
  const copy = cpuMemory().allocate(weightBytes);
  cpuMemory().copy(ptr, 0, copy, 0, weightBytes);
  entries.set(key, { copy, weightBytes, u, bytes });
  totalBytes += bytes;
  evict(key);
  return { u, release() {} };
}

/** What backends.nnpack.transformCacheInfo() returns (the core's contract). */
export type TransformCacheInfo = NnpackTransformCacheInfo;

/** Frees every cached transform. */
export function clearTransformCache(): void {
  for (const [key, e] of [...entries]) drop(key, e);
  hits = 0;
  misses = 0;
}

export function transformCacheInfo(): TransformCacheInfo {
  return { enabled, entries: entries.size, bytes: totalBytes, limitBytes, hits, misses };
}

/** Bytes the cache may hold (default 256 MiB); 0 turns caching off. Returns the previous limit. */
export function setTransformCacheLimit(bytes: number): number {
  if (!Number.isFinite(bytes) || bytes < 0)
    throw new ArgumentError(`nnpack.setTransformCacheLimit: bytes must be >= 0, got ${bytes}`);
  const prev = limitBytes;
  limitBytes = bytes;
  evict("");
  return prev;
}

/**
 * Turns the cache on or off without dropping what it holds (off: every call transforms
 * its weights, as NNPACK's compute strategy does). Returns the previous setting.
 */
export function setTransformCacheEnabled(on: boolean): boolean {
  // Checked: a string "false" or a 1 silently turned the cache off (or kept it off).
  if (typeof on !== "boolean")
    throw new ArgumentError(
      `nnpack.setTransformCacheEnabled: on must be true or false, got ${typeof on === "string" ? JSON.stringify(on) : String(on)}`,
    );
  const prev = enabled;
  enabled = on;
  return prev;
}
