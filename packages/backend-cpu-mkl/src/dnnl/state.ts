/**
 * oneDNN's process-wide state: the library, one CPU engine and one in-order stream, the
 * thread count it runs with, and the cache of weights reordered to its layouts.
 */
import { empty, getFlag, runtime, type Tensor } from "@backplane/core";
import { allFinite } from "@backplane/core/backend";
import { type Libc, libc } from "../native/libc.ts";
import type { LoadedDnnl } from "./library.ts";

interface Ready extends LoadedDnnl {
  engine: bigint;
  stream: bigint;
}

/** A weight tensor's oneDNN layout, valid while the weights equal `copy`. */
interface CachedWeights {
  copy: Tensor;
  reordered: Tensor;
  key: string;
}

/** Recently reordered weights, by weight tensor (least recently used first out). */
class WeightCache {
  private readonly entries = new Map<Tensor, CachedWeights>();
  limit = 32;
  hits = 0;
  misses = 0;

  /** The weights reordered by `fill`, reused while they are byte-for-byte unchanged. */
  get(weight: Tensor, bytes: number, impl: string, fill: (into: Tensor) => void): Tensor {
    const key = `${bytes}:${impl}:${weight.shape.join("x")}`;
    const e = this.entries.get(weight);
    const libc = dnnlState.libc;
    const wData = weight.hostData();
    if (e && e.key === key && !weight.disposed && libc) {
      if (libc.memcmp(e.copy.hostData(), wData, BigInt(wData.byteLength)) === 0) {
        this.entries.delete(weight);
        this.entries.set(weight, e); // most recent last
        this.hits++;
        return e.reordered;
      }
    }
    this.misses++;
    if (e) this.drop(weight, e);
    const reordered = empty([Math.max(1, Math.ceil(bytes / 4))], { dtype: "float32" });
    try {
      fill(reordered);
    } catch (err) {
      reordered.dispose();
      throw err;
    }
    if (libc) {
      const copy = empty([wData.length], { dtype: weight.dtype });
      (copy.hostData() as Float32Array).set(wData as Float32Array); // same type: a byte copy
      this.entries.set(weight, { copy, reordered, key });
      while (this.entries.size > this.limit) {
        const [k, old] = this.entries.entries().next().value as [Tensor, CachedWeights];
        this.drop(k, old);
      }
    }
    return reordered;
  }

  private drop(k: Tensor, e: CachedWeights): void {
    this.entries.delete(k);
    e.copy.dispose();
    e.reordered.dispose();
  }

  clear(): void {
    for (const [k, e] of [...this.entries]) this.drop(k, e);
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Whether a weight tensor is all finite, remembered while its bytes equal the copy taken
 * when it was found so (memcmp: about 30 µs a MiB): scanning a 3x3 256>256 layer's weights
 * on every call cost 0.3 ms of a 2 ms convolution.
 */
class FiniteWeights {
  private readonly entries = new Map<Tensor, Tensor>();
  limit = 32;

  check(weight: Tensor): boolean {
    const libc = dnnlState.libc;
    const data = weight.hostData();
    const seen = this.entries.get(weight);
    if (seen && libc && !weight.disposed && weight.isContiguous) {
      if (libc.memcmp(seen.hostData(), data, BigInt(data.byteLength)) === 0) return true;
    }
    if (seen) this.forget(weight, seen);
    if (!allFinite(weight)) return false;
    if (libc && weight.isContiguous && data.byteLength > 0) {
      const copy = empty([data.byteLength], { dtype: "uint8" });
      (copy.hostData() as Uint8Array).set(
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      );
      this.entries.set(weight, copy);
      while (this.entries.size > this.limit) {
        const [k, old] = this.entries.entries().next().value as [Tensor, Tensor];
        this.forget(k, old);
      }
    }
    return true;
  }

  private forget(k: Tensor, copy: Tensor): void {
    this.entries.delete(k);
    copy.dispose();
  }

  clear(): void {
    for (const [k, copy] of [...this.entries]) this.forget(k, copy);
  }
}

class DnnlState {
  lib: Ready | undefined;
  libc: Libc | undefined;
  readonly weightCache = new WeightCache();
  readonly finiteWeights = new FiniteWeights();
  /** The OpenMP thread count last applied (0: none yet). */
  threads = 0;

  /** The loaded library (the backend's init made it; kernels run only after). */
  ready(): Ready {
    if (!this.lib) throw new Error("oneDNN is not loaded (await backends.ready())");
    return this.lib;
  }

  /** The thread setting: backends.openmp (torch.set_num_threads), else the cores. */
  threadsWanted(): number {
    return (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency;
  }

  /** oneDNN's OpenMP threads follow the setting (or `override`, for a plan that runs on one). */
  applyThreads(override?: number): void {
    const n = override ?? this.threadsWanted();
    if (n !== this.threads && this.lib?.setThreads) {
      this.lib.setThreads(n);
      this.threads = n;
    }
  }

  async openLibc(): Promise<void> {
    this.libc = await libc();
  }
}

export const dnnlState: DnnlState = new DnnlState();
