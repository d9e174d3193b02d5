/**
 * oneDNN's process-wide state: the library, one CPU engine and one in-order stream, the
 * thread count it runs with, and the cache of weights reordered to its layouts.
 */
import { bytesPerElement, empty, getFlag, runtime, type Tensor } from "@backplane/core";
import { allFinite } from "@backplane/core/cpu";
import { type Libc, libc } from "../native/libc.ts";
import type { LoadedDnnl } from "./library.ts";

interface Ready extends LoadedDnnl {
  engine: bigint;
  stream: bigint;
}

/**
 * What is known of a weight tensor while its bytes equal `copy`: whether it is all finite
 * (supports() asks on every call), and its reorder into oneDNN's layout `key`.
 */
interface KnownWeights {
  copy: Tensor;
  finite?: boolean;
  reordered?: Tensor;
  key?: string;
}

/**
 * The bytes a weight's elements lie in: from its first element to its last, not to the end
 * of its storage (hostData's view), so a weight that is a view into a large buffer is
 * compared and copied at its own size.
 */
function viewBytes(weight: Tensor): Uint8Array {
  const data = weight.hostData();
  let last = 0;
  weight.shape.forEach((n, i) => {
    last += (n - 1) * Math.abs(weight.strides[i]);
  });
  const elements = weight.numel === 0 ? 0 : last + 1;
  const bytes = Math.min(data.byteLength, elements * bytesPerElement(weight.dtype));
  return new Uint8Array(data.buffer, data.byteOffset, bytes);
}

/**
 * Recently seen weights, by weight tensor (least recently used first out). Whether the bytes
 * are unchanged is one memcmp against a copy (about 30 µs a MiB); rescanning a 3x3 256>256
 * layer's weights for NaN on every call cost 0.3 ms of a 2 ms convolution. A call's
 * supports() and run() share its params object, and no user code runs between them, so
 * the bytes are compared once a call (`call`: that object), not twice (50 µs of a 3x3
 * 256>256 layer's 2.3 ms on a Zen 4).
 */
class WeightCache {
  private readonly entries = new Map<Tensor, KnownWeights>();
  /** The weight last found (or copied) unchanged, and the call that did. */
  private compared: { weight: Tensor; call: object } | undefined;
  limit = 32;
  /** Reorders served from the cache, and made. */
  hits = 0;
  misses = 0;
  /** Byte comparisons made (one a call, while the weights are unchanged). */
  comparisons = 0;

  /** Whether the weights hold no NaN or infinity (scanned only when they changed). */
  finite(weight: Tensor, call?: object): boolean {
    const e = this.known(weight, call);
    if (e?.finite !== undefined) return e.finite;
    const finite = allFinite(weight);
    const entry = e ?? this.remember(weight, call);
    if (entry) entry.finite = finite;
    return finite;
  }

  /** The weights reordered by `fill`, reused while they are byte-for-byte unchanged. */
  get(
    weight: Tensor,
    bytes: number,
    impl: string,
    fill: (into: Tensor) => void,
    call?: object,
  ): Tensor {
    const key = `${bytes}:${impl}:${weight.shape.join("x")}`;
    const e = this.known(weight, call);
    if (e?.reordered && e.key === key) {
      this.hits++;
      return e.reordered;
    }
    this.misses++;
    const reordered = empty([Math.max(1, Math.ceil(bytes / 4))], { dtype: "float32" });
    try {
      fill(reordered);
    } catch (err) {
      reordered.dispose();
      throw err;
    }
    const entry = e ?? this.remember(weight, call);
    if (entry) {
      entry.reordered?.dispose();
      entry.reordered = reordered;
      entry.key = key;
    }
    return reordered;
  }

  /** The entry while the weight's bytes are unchanged; a stale one is dropped. */
  private known(weight: Tensor, call?: object): KnownWeights | undefined {
    const e = this.entries.get(weight);
    if (!e) return undefined;
    const seen = this.compared;
    if (call && seen?.weight === weight && seen.call === call && !weight.disposed) return e;
    const libc = dnnlState.libc;
    const data = viewBytes(weight);
    this.comparisons++;
    if (!weight.disposed && libc?.memcmp(e.copy.hostData(), data, BigInt(data.byteLength)) === 0) {
      this.entries.delete(weight);
      this.entries.set(weight, e); // most recent last
      this.compared = call ? { weight, call } : undefined;
      return e;
    }
    this.drop(weight, e);
    return undefined;
  }

  /** A new entry holding a copy of the weight's bytes (none without libc's memcmp). */
  private remember(weight: Tensor, call?: object): KnownWeights | undefined {
    if (!dnnlState.libc) return undefined;
    this.dropDisposed();
    this.compared = call ? { weight, call } : undefined;
    const copy = empty([viewBytes(weight).byteLength], { dtype: "uint8" });
    // The weight's view is taken after the copy is allocated: an allocation that grows a
    // plain (unshared) CPU memory detaches the views taken before it (set() then threw a
    // TypeError inside supports(), and onednn-conv refused every layer).
    (copy.hostData() as Uint8Array).set(viewBytes(weight));
    const entry: KnownWeights = { copy };
    this.entries.set(weight, entry);
    while (this.entries.size > this.limit) {
      const [k, old] = this.entries.entries().next().value as [Tensor, KnownWeights];
      this.drop(k, old);
    }
    return entry;
  }

  /**
   * Forgets the weights disposed since: never looked up again, their copy and reorder were
   * held until 32 newer weights pushed them out (a replaced model's layers stayed allocated).
   */
  private dropDisposed(): void {
    for (const [k, e] of [...this.entries]) if (k.disposed) this.drop(k, e);
  }

  private drop(k: Tensor, e: KnownWeights): void {
    this.entries.delete(k);
    e.copy.dispose();
    e.reordered?.dispose();
  }

  clear(): void {
    for (const [k, e] of [...this.entries]) this.drop(k, e);
  }

  get size(): number {
    return this.entries.size;
  }
}

class DnnlState {
  lib: Ready | undefined;
  libc: Libc | undefined;
  readonly weightCache = new WeightCache();
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
