/**
 * How the calling thread waits for its workers: spin on a control word for
 * `callerSpin` microseconds (a wake-up costs ~15 us, so short tasks finish inside the
 * spin), then block in Atomics.wait in slices so a stall watchdog can run. A worker that
 * makes no progress for `stallTimeoutMs` is declared hung and its chunk counted as failed.
 */
import { LAYOUT as L } from "./protocol.ts";

/** Atomics.wait slice: how often a blocked caller checks the watchdog. */
const SLICE_MS = 5;

/** What the wait loop reads of the pool. */
export interface CallerWaitContext {
  readonly g: Int32Array;
  readonly slots: readonly { id: number; ctl: Int32Array }[];
  readonly callerSpin: number;
  readonly canBlock: boolean;
  readonly stallTimeoutMs: number;
  hung(slot: CallerWaitContext["slots"][number], why: string): void;
}

const nowMs = (): number => performance.now();

/** Waits until no worker is still reading the previous task's description. */
export function waitNobodyInside(p: CallerWaitContext): void {
  const g = p.g;
  if (Atomics.load(g, L.G_INSIDE) === 0) return;
  const start = nowMs();
  const spinEnd = start + p.callerSpin / 1000;
  let polls = 0;
  for (;;) {
    const v = Atomics.load(g, L.G_INSIDE);
    if (v === 0) return;
    // (the clock only every 256 polls: performance.now() may cost microseconds)
    if ((++polls & 255) !== 0 || nowMs() < spinEnd) continue;
    if (p.canBlock) Atomics.wait(g, L.G_INSIDE, v, SLICE_MS);
    if (p.stallTimeoutMs > 0 && nowMs() - start > p.stallTimeoutMs) {
      // Workers stuck inside a closed task: count them out.
      for (const s of p.slots) {
        if (Atomics.exchange(s.ctl, L.S_INSIDE, 0) === 1) {
          Atomics.sub(g, L.G_INSIDE, 1);
          p.hung(s, "did not leave a finished task");
        }
      }
      if (Atomics.load(g, L.G_INSIDE) !== 0) Atomics.store(g, L.G_INSIDE, 0);
      return;
    }
  }
}

/** Waits until every chunk taken is finished (all of them unless the task failed). */
export function waitChunksDone(p: CallerWaitContext, total: number): void {
  const g = p.g;
  let target = total;
  let cut = false;
  let lastDone = -1;
  let lastProgress = nowMs();
  const spinEnd = lastProgress + p.callerSpin / 1000;
  let polls = 0;
  for (;;) {
    if (!cut && Atomics.load(g, L.G_FAILED) !== 0) {
      // Nobody takes new chunks; wait for those already taken.
      target = Math.min(total, Atomics.exchange(g, L.G_NEXT, total));
      cut = true;
    }
    const d = Atomics.load(g, L.G_DONE);
    if (d >= target) return;
    // (the clock only every 256 polls: performance.now() may cost microseconds)
    if ((++polls & 255) !== 0) continue;
    const t = nowMs();
    if (d !== lastDone) {
      lastDone = d;
      lastProgress = t;
    }
    if (t < spinEnd) continue;
    if (p.canBlock) Atomics.wait(g, L.G_DONE, d, SLICE_MS);
    if (p.stallTimeoutMs > 0 && nowMs() - lastProgress > p.stallTimeoutMs) {
      for (const s of p.slots) {
        if (Atomics.load(s.ctl, L.S_HOLD) === 0) continue;
        p.hung(s, `made no progress for ${p.stallTimeoutMs} ms (stallTimeoutMs)`);
        Atomics.compareExchange(g, L.G_FAILED, 0, s.id);
        if (Atomics.exchange(s.ctl, L.S_HOLD, 0) !== 0) Atomics.add(g, L.G_DONE, 1);
      }
      lastProgress = nowMs();
    }
  }
}
