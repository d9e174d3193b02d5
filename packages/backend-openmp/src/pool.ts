/**
 * The thread pool: what OpenMP is to PyTorch. One set of workers that every CPU kernel
 * shares through the core's parallelFor(); each worker has every registered WASM module
 * instantiated on the one shared CPU memory, so a chunk of a task is a plain call of an
 * export on the worker's own instance, over tensors where they already are.
 *
 * A run (ParallelService.run) is lock-free and needs no postMessage:
 * 1. wait until no worker is still reading the previous task (G_INSIDE == 0; almost always
 *    true already);
 * 2. write the task into the pool's control block and open it;
 * 3. wake `min(threads - 1, chunks - 1)` ready workers (Atomics.add + notify on each one's
 *    wake word; a worker still spinning sees it within a few hundred nanoseconds);
 * 4. take chunks as thread 0 (Atomics.add on G_NEXT) like every worker does, so a slow or
 *    sleeping worker never delays a run: the caller simply takes its chunks;
 * 5. spin, then Atomics.wait in short slices, until every chunk taken is finished.
 * Chunk boundaries depend only on the task and `threads` (static: chunksOf(task, threads);
 * dynamic: `chunk` items each), never on which thread runs which chunk.
 */
import { ArgumentError, getFlag, runtime, WorkerError } from "@backplane/core";
import {
  chunkArgs,
  host,
  onWasmModule,
  type ParallelService,
  type ParallelTask,
  validateTask,
  type WasmMemory,
  type WasmModule,
  type WasmModuleEntry,
  wasmModules,
} from "@backplane/core/cpu";
import { waitChunksDone, waitNobodyInside } from "./caller-wait.ts";
import { DEBUG_MODULE, LAYOUT as L } from "./protocol.ts";
import {
  hasWebWorkers,
  spawnWorker,
  type WorkerHandle,
  type WorkerInit,
  workerThreadsModule,
} from "./spawn.ts";
import type { WorkerKind } from "./worker-source.ts";

export interface PoolOptions {
  /** The CPU memory the workers share (default: cpuMemory().memory from the core). */
  memory: WasmMemory;
  /** "auto": worker_threads where the runtime has them (Node, Bun, Deno), else Web Workers. */
  workers?: "auto" | WorkerKind;
  /** How long an idle worker spins on its wake word before sleeping (default 50). */
  spinMicros?: number;
  /** How long the caller spins on the completion counter before Atomics.wait (default 100). */
  callerSpinMicros?: number;
  /**
   * Last resort against a worker that died without a trace (killed from outside, a fatal
   * engine error): when a run makes no progress for this long, the workers holding chunks
   * are declared dead and the run throws (a WorkerError; the pool replaces them). Default
   * 60 s: far above any chunk a kernel cuts, and a lost worker is an error, not a hang.
   * 0 waits as long as chunks take.
   */
  stallTimeoutMs?: number;
  /** Upper bound on workers (default 255). */
  maxWorkers?: number;
  /** Pool size when not given to ready()/ensure(): default the openmp.numThreads flag. */
  wantedThreads?: () => number;
}

export interface PoolStats {
  kind: WorkerKind;
  /** Workers ready to take chunks. */
  workers: number;
  /** Workers still starting. */
  starting: number;
  spinMicros: number;
  callerSpinMicros: number;
  runs: number;
  /** Runs that used more than the calling thread. */
  parallelRuns: number;
  /** Chunks run by workers (the rest ran on the calling thread). */
  workerChunks: number;
  failures: number;
  /** Workers that died and were replaced. */
  deaths: number;
  /** Why the last worker died or failed to start, if one did. */
  lastError?: string;
}

export interface Slot {
  id: number;
  ctl: Int32Array;
  err: Uint16Array;
  handle?: WorkerHandle;
  ready: Promise<void>;
  settle: () => void;
  retired: boolean;
  wasReady: boolean;
  /** Modules this worker could not instantiate (reported in its ready message). */
  failedModules: [string, string][];
}

/** See PoolOptions.stallTimeoutMs. */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;
const MAX_START_FAILURES = 3;
const START_RETRY_MS = 5000;

function nowMs(): number {
  return performance.now();
}

function resolveKind(pref: PoolOptions["workers"]): WorkerKind {
  if (pref === "web" || pref === "worker_threads") return pref;
  if (workerThreadsModule()) return "worker_threads";
  return "web";
}

/**
 * Whether workers can run `module`'s exports: a worker instantiates it with
 * `{ env: { memory, abort } }` on the shared CPU memory, so every import must be one of
 * those two, the memory among them. A module with a memory of its own would write into the
 * worker's private copy (items silently missing from the result); one with other imports
 * cannot be instantiated there at all. Such modules run on the calling thread only.
 */
export function runsOnWorkers(module: WasmModule): boolean {
  let imports: WebAssembly.ModuleImportDescriptor[];
  try {
    imports = WebAssembly.Module.imports(module as WebAssembly.Module);
  } catch {
    return false; // not a WebAssembly.Module: nothing a worker could instantiate
  }
  let memory = false;
  for (const i of imports) {
    if (i.module !== "env") return false;
    if (i.name === "memory" && i.kind === "memory") memory = true;
    else if (i.name !== "abort" || i.kind !== "function") return false;
  }
  return memory;
}

/** Whether this thread may block in Atomics.wait (a browser's main thread may not). */
function threadCanBlock(): boolean {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

/** A pool of workers implementing the core's ParallelService. */
export class WorkerPool implements ParallelService {
  readonly kind: WorkerKind;
  private readonly memory: WebAssembly.Memory;
  private readonly ctlBuffer = new SharedArrayBuffer(L.CTL_BYTES);
  /** The shared control words (protocol.ts LAYOUT); read by the caller's wait loop. */
  readonly g: Int32Array = new Int32Array(this.ctlBuffer);
  private readonly gf = new Float64Array(this.ctlBuffer);
  private readonly gs = new Uint16Array(this.ctlBuffer);
  readonly slots: Slot[] = [];
  private readonly byId = new Map<number, Slot>();
  private nextId = 1;
  private readonly modules = new Map<string, WasmModuleEntry>();
  /** Modules workers can run (runsOnWorkers); tasks of the others stay on this thread. */
  private readonly workerModules = new Set<string>();
  private readonly genOf = new Map<string, number>();
  private gen = 0;
  private readonly fnIds = new Map<string, number>();
  private lastFnId = -1;
  private callerFns = new Map<number, (...args: number[]) => unknown>();
  private running = false;
  private closed = false;
  readonly canBlock: boolean = threadCanBlock();
  private readonly sleeper = new Int32Array(new SharedArrayBuffer(4));
  private startFailures = 0;
  /** Workers the pool keeps: ensure() raises it, resize() sets it. */
  private target = 0;
  /** Resolves when the next scheduled worker start has run. */
  private spawnTick: Promise<void> | undefined;
  private lastStartFailure = 0;
  private readonly unsubscribe: () => void;
  callerSpin: number;
  private _stallTimeoutMs: number;
  /**
   * Test hook: how long the caller of a parallel run waits for a woken worker to claim a
   * chunk before taking chunks itself (0, the default: no wait). On a loaded machine the
   * caller can otherwise finish every chunk before a worker is scheduled, so a test that
   * must see a worker take part sets it (bounded: a worker that never comes is a failure,
   * not a hang).
   */
  helperWaitMs = 0;
  private readonly maxWorkers: number;
  private readonly wanted: () => number;
  private readonly counters = {
    runs: 0,
    parallelRuns: 0,
    workerChunks: 0,
    failures: 0,
    deaths: 0,
  };
  private lastError: string | undefined;
  /** The median of the last measureWakeLatency(), in microseconds. */
  wakeLatencyMicros: number | undefined;

  constructor(options: PoolOptions) {
    if (options === null || typeof options !== "object")
      throw new ArgumentError("openmp: WorkerPool needs an options object with a memory");
    // Workers share this memory: without a shared WebAssembly.Memory they cannot run anything.
    const mem = options.memory as { buffer?: unknown; grow?: unknown } | undefined;
    if (
      typeof mem?.grow !== "function" ||
      typeof SharedArrayBuffer === "undefined" ||
      !(mem.buffer instanceof SharedArrayBuffer)
    )
      throw new ArgumentError(
        "openmp: WorkerPool options.memory must be a shared WebAssembly.Memory (e.g. cpuMemory().memory)",
      );
    const kinds = ["auto", "web", "worker_threads"];
    if (options.workers !== undefined && !kinds.includes(options.workers))
      throw new ArgumentError(
        `openmp: workers must be one of ${kinds.join(", ")}, got ${JSON.stringify(options.workers)}`,
      );
    if (
      options.maxWorkers !== undefined &&
      (!Number.isInteger(options.maxWorkers) || options.maxWorkers < 0)
    )
      throw new ArgumentError(
        `openmp: maxWorkers must be an integer >= 0, got ${String(options.maxWorkers)}`,
      );
    this.memory = options.memory;
    this.kind = resolveKind(options.workers);
    if (this.kind === "web" && !hasWebWorkers())
      throw new ArgumentError("openmp: this runtime has no Web Workers");
    if (this.kind === "worker_threads" && !workerThreadsModule())
      throw new ArgumentError("openmp: this runtime has no worker_threads");
    this.spinMicros = options.spinMicros ?? 50;
    this.callerSpin = options.callerSpinMicros ?? 100;
    this._stallTimeoutMs = DEFAULT_STALL_TIMEOUT_MS;
    this.stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    this.maxWorkers = options.maxWorkers ?? 255;
    this.wanted =
      options.wantedThreads ??
      (() => (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency);
    for (const e of wasmModules()) this.addModule(e);
    this.unsubscribe = onWasmModule((e) => this.addModule(e));
  }

  // ------------------------------------------------------------------ settings

  /** Microseconds an idle worker spins before it sleeps (OMP_WAIT_POLICY=passive: 0). */
  get spinMicros(): number {
    return Atomics.load(this.g, L.G_SPIN_US);
  }
  set spinMicros(us: number) {
    if (!Number.isFinite(us) || us < 0)
      throw new ArgumentError(`openmp: spinMicros must be a number >= 0, got ${String(us)}`);
    Atomics.store(this.g, L.G_SPIN_US, Math.min(Math.round(us), 1_000_000));
  }
  /** See PoolOptions.stallTimeoutMs (default 60 s; 0: wait as long as chunks take). */
  get stallTimeoutMs(): number {
    return this._stallTimeoutMs;
  }
  set stallTimeoutMs(ms: number) {
    // A negative or NaN value would silently switch the watchdog off (the check is `> 0`).
    if (typeof ms !== "number" || !(ms >= 0))
      throw new ArgumentError(
        `openmp: stallTimeoutMs must be a number >= 0 (0: no watchdog), got ${String(ms)}`,
      );
    this._stallTimeoutMs = ms;
  }
  /** Microseconds the caller spins on the completion counter before blocking. */
  get callerSpinMicros(): number {
    return this.callerSpin;
  }
  set callerSpinMicros(us: number) {
    if (!Number.isFinite(us) || us < 0)
      throw new ArgumentError(`openmp: callerSpinMicros must be a number >= 0, got ${String(us)}`);
    this.callerSpin = us;
  }

  // ------------------------------------------------------------------ modules

  private addModule(e: WasmModuleEntry): void {
    this.modules.set(e.id, e);
    this.callerFns = new Map();
    if (!runsOnWorkers(e.module)) {
      // (workers keep a former module of this id, but no task of it reaches them now)
      this.workerModules.delete(e.id);
      return;
    }
    this.workerModules.add(e.id);
    const gen = ++this.gen;
    this.genOf.set(e.id, gen);
    for (const s of this.slots) {
      if (!s.retired && s.handle)
        s.handle.post({ type: "module", id: e.id, module: e.module, gen });
    }
  }

  private fnIdOf(module: string, fn: string): number {
    const key = `${module}\u0000${fn}`;
    let id = this.fnIds.get(key);
    if (id === undefined) this.fnIds.set(key, (id = this.fnIds.size + 1));
    return id;
  }

  /** The export on this thread's instance (the same errors as the core's serial path). */
  private callerFn(task: ParallelTask, fnId: number): (...args: number[]) => unknown {
    const cached = this.callerFns.get(fnId);
    if (cached) return cached;
    let fn: unknown;
    if (task.module === DEBUG_MODULE) fn = this.debugFn(task.fn);
    else {
      const e = this.modules.get(task.module);
      if (!e)
        throw new ArgumentError(
          `parallelFor: no WASM module ${JSON.stringify(task.module)} is registered`,
        );
      fn = e.instance.exports[task.fn];
    }
    if (typeof fn !== "function")
      throw new ArgumentError(`parallelFor: module ${task.module} has no export ${task.fn}`);
    this.callerFns.set(fnId, fn as (...args: number[]) => unknown);
    return fn as (...args: number[]) => unknown;
  }

  /** The test hooks, as the calling thread runs them: wait, so that workers take chunks. */
  private debugFn(name: string): ((...args: number[]) => unknown) | undefined {
    if (name === "noop") return () => {};
    if (name === "stamp") return () => Atomics.store(this.g, L.G_STAMPED, 1);
    if (name === "exit" || name === "throw" || name === "sleep")
      return (micros: number) => this.sleep((micros || 0) / 1000);
    // (a worker sleeps the first argument, this thread the second)
    if (name === "hang") return (_: number, micros: number) => this.sleep((micros || 0) / 1000);
    return undefined;
  }

  private sleep(ms: number): void {
    if (this.canBlock) Atomics.wait(this.sleeper, 0, 0, ms);
    else {
      const end = nowMs() + ms;
      while (nowMs() < end) {}
    }
  }

  // ------------------------------------------------------------------ workers

  private state(s: Slot): number {
    return Atomics.load(s.ctl, L.S_STATE);
  }

  private live(): Slot[] {
    return this.slots.filter((s) => !s.retired);
  }

  /** Workers ready to take chunks now. */
  readyWorkers(): number {
    let n = 0;
    for (const s of this.slots) if (!s.retired && this.state(s) === L.READY) n++;
    return n;
  }

  /** Threads a task may use now: this one and every ready worker. Grows the pool lazily. */
  threads(): number {
    this.ensure();
    return 1 + this.readyWorkers();
  }

  /**
   * Grows the pool to `threads - 1` workers (default: the openmp.numThreads setting). The
   * workers start in later event-loop turns, one per turn, never inside this call: starting
   * one can block the calling thread (Deno's Worker constructor takes tens of ms), and this
   * is called from kernels (threads()) and from failing runs.
   */
  ensure(threads: number = this.wanted()): void {
    if (this.closed) return;
    const want = Math.min(this.maxWorkers, Math.max(0, Math.floor(threads) - 1));
    if (want > this.target) this.target = want;
    // After MAX_START_FAILURES workers in a row failed to start, wait a while before trying again.
    if (
      this.startFailures >= MAX_START_FAILURES &&
      nowMs() - this.lastStartFailure > START_RETRY_MS
    )
      this.startFailures = MAX_START_FAILURES - 1;
    if (this.needsWorkers() && !this.spawnTick) {
      let tick = () => {};
      this.spawnTick = new Promise<void>((r) => {
        tick = r;
      });
      const timer = setTimeout(() => {
        this.spawnTick = undefined;
        if (this.needsWorkers()) this.spawn();
        tick();
        this.ensure(0);
      }, 0);
      // (an idle pool keeps nothing alive; ready() keeps the loop alive while it waits)
      (timer as { unref?(): void }).unref?.();
      if (typeof timer === "number") host.Deno?.unrefTimer?.(timer);
    }
  }

  /**
   * Follows a new thread setting: grows as ensure() does, and stops the newest workers past
   * both the setting and the machine's cores, so a scope that asked for more threads than
   * the machine has ends with the workers it started with. Workers within the core count
   * stay (idle ones sleep): a 1-thread scope around an op must not cost a worker restart.
   * Call it between runs, as the openmp.numThreads hook does.
   */
  resize(threads: number): void {
    if (this.closed) return;
    const want = Math.min(this.maxWorkers, Math.max(0, Math.floor(threads) - 1));
    const keep = Math.max(want, Math.min(this.maxWorkers, runtime().hardwareConcurrency - 1));
    this.target = Math.min(this.target, keep);
    for (const s of this.slots.slice(keep).reverse()) this.stop(s, false);
    this.ensure(threads);
  }

  /** Asks a worker to exit and forgets it (no replacement). */
  private stop(slot: Slot, terminateNow = true): void {
    Atomics.store(slot.ctl, L.S_STATE, L.STOPPING);
    Atomics.add(slot.ctl, L.S_WAKE, 1);
    Atomics.notify(slot.ctl, L.S_WAKE);
    this.retire(slot, "stopped", false, terminateNow);
  }

  private needsWorkers(): boolean {
    return (
      !this.closed && this.slots.length < this.target && this.startFailures < MAX_START_FAILURES
    );
  }

  /** Resolves once `threads - 1` workers are ready (or could not start); returns threads(). */
  async ready(threads: number = this.wanted()): Promise<number> {
    // Workers are unref'd (an idle pool never keeps a script alive): keep the event loop
    // alive ourselves while someone waits for them.
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    try {
      for (;;) {
        this.ensure(threads);
        const want = Math.min(this.maxWorkers, Math.max(0, Math.floor(threads) - 1));
        if (this.readyWorkers() >= want) return 1 + this.readyWorkers();
        const starting = this.slots.filter((s) => this.state(s) === L.STARTING);
        const waits: Promise<void>[] = starting.map((s) => s.ready);
        if (this.spawnTick) waits.push(this.spawnTick);
        if (waits.length === 0) return 1 + this.readyWorkers(); // none can come (failures)
        keepAlive ??= setInterval(() => {}, 1000);
        await Promise.race(waits);
      }
    } finally {
      if (keepAlive !== undefined) clearInterval(keepAlive);
    }
  }

  private spawn(): void {
    const id = this.nextId++;
    const slotBuffer = new SharedArrayBuffer(L.SLOT_BYTES);
    let settle = () => {};
    const ready = new Promise<void>((r) => {
      settle = r;
    });
    const slot: Slot = {
      id,
      ctl: new Int32Array(slotBuffer),
      err: new Uint16Array(slotBuffer, L.ERR_OFF_BYTES, L.ERR_CHARS),
      ready,
      settle,
      retired: false,
      wasReady: false,
      failedModules: [],
    };
    this.slots.push(slot);
    this.byId.set(id, slot);
    const init: WorkerInit = {
      id,
      ctl: this.ctlBuffer,
      slot: slotBuffer,
      memory: this.memory,
      modules: [...this.modules.values()]
        .filter((e) => this.workerModules.has(e.id))
        .map((e) => ({ id: e.id, module: e.module })),
      gen: this.gen,
    };
    try {
      slot.handle = spawnWorker(this.kind, init, {
        message: (m) => {
          const msg = m as {
            type?: string;
            failed?: [string, string][];
            id?: string;
            error?: string;
          };
          if (msg?.type === "ready") {
            slot.wasReady = true;
            slot.failedModules = msg.failed ?? [];
            this.startFailures = 0;
            slot.settle();
          } else if (msg?.type === "loaded" && typeof msg.id === "string") {
            const id = msg.id;
            slot.failedModules = slot.failedModules.filter(([failed]) => failed !== id);
            if (typeof msg.error === "string") slot.failedModules.push([id, msg.error]);
          }
        },
        error: (message) => this.retire(slot, `worker ${id} failed: ${message}`),
        exit: (code) => this.retire(slot, `worker ${id} exited with code ${code}`),
      });
    } catch (e) {
      this.retire(slot, `worker ${id} could not start: ${(e as Error).message}`);
    }
  }

  /** Takes a dead (or stopped) worker out of the pool; a replacement starts at once. */
  private retire(slot: Slot, reason: string, replace = true, terminateNow = true): void {
    if (slot.retired) return;
    slot.retired = true;
    if (this.state(slot) !== L.STOPPING) {
      const own = this.errorText(slot);
      this.lastError = own ? `worker ${slot.id}: ${own}` : reason;
      this.counters.deaths++;
      if (slot.wasReady || Atomics.load(slot.ctl, L.S_STARTED) === 1) this.startFailures = 0;
      else {
        this.startFailures++;
        this.lastStartFailure = nowMs();
      }
    }
    Atomics.store(slot.ctl, L.S_STATE, L.DEAD);
    this.byId.delete(slot.id);
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    slot.settle();
    const terminate = () => {
      try {
        slot.handle?.terminate();
      } catch {
        // already gone
      }
      // A worker ended inside a task never runs its leave(): count it out, or the next
      // task would wait for it until the stall timeout (forever with a timeout of 0).
      if (
        Atomics.exchange(slot.ctl, L.S_INSIDE, 0) === 1 &&
        Atomics.sub(this.g, L.G_INSIDE, 1) === 1
      )
        Atomics.notify(this.g, L.G_INSIDE);
    };
    // A worker asked to stop leaves by itself when it wakes; terminating it while it is
    // still inside Atomics.wait left Deno's threads misbehaving, so that is a late fallback.
    if (terminateNow) terminate();
    else {
      const timer = setTimeout(terminate, 1000);
      (timer as { unref?(): void }).unref?.();
      if (typeof timer === "number") host.Deno?.unrefTimer?.(timer);
    }
    if (replace) this.ensure();
  }

  private errorText(slot: Slot): string {
    const n = Atomics.load(slot.ctl, L.S_ERRLEN);
    let out = "";
    for (let i = 0; i < n; i += 256)
      out += String.fromCharCode(...slot.err.subarray(i, Math.min(n, i + 256)));
    return out;
  }

  /** Stops every worker; the pool starts new ones when it is used again. */
  async shutdown(): Promise<void> {
    for (const s of [...this.slots]) this.stop(s);
    this.startFailures = 0;
    this.target = 0;
    await new Promise((r) => setTimeout(r, 0));
  }

  /** Shuts the pool down for good: workers stop and new modules are no longer followed. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    await this.shutdown();
  }

  stats(): PoolStats {
    return {
      kind: this.kind,
      workers: this.readyWorkers(),
      starting: this.live().filter((s) => this.state(s) === L.STARTING).length,
      spinMicros: this.spinMicros,
      callerSpinMicros: this.callerSpin,
      ...this.counters,
      lastError: this.lastError,
    };
  }

  /** Modules some worker could not instantiate, with the reason (empty when all loaded). */
  moduleFailures(): { worker: number; module: string; reason: string }[] {
    return this.live().flatMap((s) =>
      s.failedModules.map(([module, reason]) => ({ worker: s.id, module, reason })),
    );
  }

  // ------------------------------------------------------------------ running

  /** Runs the task on up to `threads` threads (this one included); see the file comment. */
  run(task: ParallelTask, threads: number): void {
    validateTask(task, threads);
    const items = task.items;
    if (items === 0) return;
    const n = threads;
    const size = task.schedule === "dynamic" ? (task.chunk ?? 1) : Math.ceil(items / n);
    const total = Math.ceil(items / size);
    const fnId = this.fnIdOf(task.module, task.fn);
    const fn = this.callerFn(task, fnId);
    this.counters.runs++;
    const helpers =
      n > 1 && total > 1 && total < 2 ** 30 && !this.running && this.fitsWorkers(task)
        ? this.pickHelpers(n - 1, total - 1)
        : [];
    if (helpers.length === 0) {
      for (let c = 0; c < total; c++) {
        const i0 = c * size;
        fn(...chunkArgs(task, i0, Math.min(size, items - i0), 0));
      }
      return;
    }
    this.running = true;
    try {
      this.runParallel(task, fn, fnId, n, size, total, helpers);
    } finally {
      this.running = false;
    }
  }

  /** Whether workers can take part: the task fits the control block, the module runs there. */
  private fitsWorkers(task: ParallelTask): boolean {
    const targs = task.threadArgs ?? [];
    for (const t of targs) {
      if (!(t.index >= 0 && t.index < task.args.length))
        throw new ArgumentError(
          `parallelFor: threadArgs index ${t.index} is outside the ${task.args.length} arguments`,
        );
    }
    return (
      task.args.length <= L.MAX_ARGS &&
      targs.length <= L.MAX_THREAD_ARGS &&
      task.module.length + task.fn.length <= L.STR_MAX &&
      (task.module === DEBUG_MODULE || this.workerModules.has(task.module))
    );
  }

  private pickHelpers(max: number, chunksLeft: number): Slot[] {
    this.ensure();
    const out: Slot[] = [];
    const want = Math.min(max, chunksLeft);
    for (const s of this.slots) {
      if (out.length >= want) break;
      if (!s.retired && this.state(s) === L.READY) out.push(s);
    }
    return out;
  }

  private runParallel(
    task: ParallelTask,
    fn: (...args: number[]) => unknown,
    fnId: number,
    threads: number,
    size: number,
    total: number,
    helpers: Slot[],
  ): void {
    const g = this.g;
    this.waitInsideZero();
    this.writeTask(task, fnId, threads, size, total);
    Atomics.store(g, L.G_STATE, L.OPEN);
    for (const h of helpers) {
      Atomics.add(h.ctl, L.S_WAKE, 1);
      // A spinning worker sees the new value by itself; only a sleeping one needs the
      // notify (a futex wake: microseconds, tens of them in some VMs).
      if (Atomics.load(h.ctl, L.S_SLEEP) !== 0) Atomics.notify(h.ctl, L.S_WAKE, 1);
    }
    this.counters.parallelRuns++;
    if (this.helperWaitMs > 0) this.waitHelperClaim();
    // Thread 0: take chunks like any worker.
    let callerError: unknown;
    let callerFailed = false;
    let mine = 0;
    const items = task.items;
    for (;;) {
      if (Atomics.load(g, L.G_FAILED) !== 0) break;
      const c = Atomics.add(g, L.G_NEXT, 1);
      if (c >= total) break;
      const i0 = c * size;
      mine++;
      try {
        fn(...chunkArgs(task, i0, Math.min(size, items - i0), 0));
      } catch (e) {
        callerError = e;
        callerFailed = true;
        Atomics.compareExchange(g, L.G_FAILED, 0, -1);
        Atomics.add(g, L.G_DONE, 1);
        break;
      }
      Atomics.add(g, L.G_DONE, 1);
    }
    this.waitDone(total);
    Atomics.store(g, L.G_STATE, L.CLOSED);
    this.counters.workerChunks += Math.max(0, Atomics.load(g, L.G_DONE) - mine);
    const failed = Atomics.load(g, L.G_FAILED);
    let err: WorkerError | undefined;
    if (failed > 0) {
      const slot = this.byId.get(failed);
      const what = task.label
        ? `parallel task "${task.label}" (${task.module}.${task.fn})`
        : `parallel task ${task.module}.${task.fn}`;
      const text = slot ? this.errorText(slot) : "unknown error";
      const dead = slot ? slot.retired || this.state(slot) === L.DEAD : false;
      const tid = slot?.handle?.threadId;
      err = new WorkerError(
        `${what}: worker ${failed}${tid !== undefined ? ` (threadId ${tid})` : ""} ${dead ? "died" : "failed"}: ${text}` +
          (dead ? "; a replacement worker is starting" : ""),
      );
      Object.assign(err, { worker: failed, task: task.label ?? `${task.module}.${task.fn}` });
    }
    // Workers found dead now are replaced (their exit events come later, on the event loop).
    for (const s of [...this.slots]) {
      if (this.state(s) === L.DEAD) this.retire(s, `worker ${s.id} died`);
    }
    if (failed === 0) return;
    this.counters.failures++;
    if (err) throw err;
    throw callerFailed ? callerError : new WorkerError(`${task.module}.${task.fn} failed`);
  }

  private writeTask(
    task: ParallelTask,
    fnId: number,
    threads: number,
    size: number,
    total: number,
  ): void {
    const g = this.g;
    const gf = this.gf;
    g[L.T_ITEMS] = task.items;
    g[L.T_SIZE] = size;
    g[L.T_THREADS] = threads;
    const nargs = task.args.length;
    g[L.T_NARGS] = nargs;
    g[L.T_COUNTARG] = task.countArg ?? -1;
    const targs = task.threadArgs ?? [];
    g[L.T_NTARGS] = targs.length;
    g[L.T_FNID] = fnId;
    if (fnId !== this.lastFnId) {
      const { module, fn } = task;
      for (let i = 0; i < module.length; i++) this.gs[L.STR_OFF + i] = module.charCodeAt(i);
      for (let i = 0; i < fn.length; i++) this.gs[L.STR_OFF + module.length + i] = fn.charCodeAt(i);
      g[L.T_MODLEN] = module.length;
      g[L.T_FNLEN] = fn.length;
      this.lastFnId = fnId;
    }
    const step = task.step;
    for (let j = 0; j < nargs; j++) {
      gf[L.F_ARGS + j] = task.args[j];
      gf[L.F_STEP + j] = step?.[j] ?? 0;
    }
    for (let t = 0; t < targs.length; t++) {
      g[L.T_TARG_INDEX + t] = targs[t].index;
      gf[L.F_TSTRIDE + t] = targs[t].stride;
    }
    g[L.G_NEXT] = 0;
    g[L.G_DONE] = 0;
    g[L.G_TOTAL] = total;
    g[L.G_TID] = 1;
    g[L.G_FAILED] = 0;
    g[L.G_MODGEN] = task.module === DEBUG_MODULE ? 0 : (this.genOf.get(task.module) ?? 0);
    g[L.G_EPOCH]++;
  }

  /** See helperWaitMs: until a worker has taken a chunk (the caller has taken none yet). */
  private waitHelperClaim(): void {
    const end = nowMs() + this.helperWaitMs;
    while (
      Atomics.load(this.g, L.G_NEXT) === 0 &&
      Atomics.load(this.g, L.G_FAILED) === 0 &&
      nowMs() < end
    )
      this.sleep(0.05);
  }

  /** Waits until no worker is still reading the previous task's description. */
  private waitInsideZero(): void {
    waitNobodyInside(this);
  }

  /** Waits until every chunk taken is finished (all of them unless the task failed). */
  private waitDone(total: number): void {
    waitChunksDone(this, total);
  }

  /** A worker that stopped responding: its text says so, and it is replaced. */
  hung(s: Slot, why: string): void {
    const text = `the worker ${why}`;
    for (let i = 0; i < Math.min(text.length, L.ERR_CHARS); i++) s.err[i] = text.charCodeAt(i);
    Atomics.store(s.ctl, L.S_ERRLEN, Math.min(text.length, L.ERR_CHARS));
    Atomics.store(s.ctl, L.S_STATE, L.DEAD);
  }

  // ------------------------------------------------------------------ probes

  /**
   * One wake-up, for bench/measure.ts: a one-chunk "stamp" task only one worker is woken
   * for, the caller watching; microseconds from the notify to the worker starting, or
   * NaN when no worker is free.
   */
  probeWake(): number {
    const helper = this.pickHelpers(1, 1)[0];
    if (!helper || this.running) return Number.NaN;
    this.running = true;
    try {
      return this.wakeOne(helper);
    } finally {
      this.running = false;
    }
  }

  private wakeOne(helper: Slot): number {
    const g = this.g;
    const task: ParallelTask = { module: DEBUG_MODULE, fn: "stamp", args: [], items: 1 };
    this.waitInsideZero();
    this.writeTask(task, this.fnIdOf(task.module, task.fn), 2, 1, 1);
    Atomics.store(g, L.G_STAMPED, 0);
    Atomics.store(g, L.G_STATE, L.OPEN);
    const t0 = nowMs();
    Atomics.add(helper.ctl, L.S_WAKE, 1);
    if (Atomics.load(helper.ctl, L.S_SLEEP) !== 0) Atomics.notify(helper.ctl, L.S_WAKE, 1);
    const limit = t0 + 1000;
    let t1 = Number.NaN;
    for (let polls = 1; ; polls++) {
      if (Atomics.load(g, L.G_STAMPED) !== 0) {
        t1 = nowMs();
        break;
      }
      if ((polls & 255) === 0 && nowMs() > limit) {
        // The worker did not come: take the chunk back so the task can close.
        if (Atomics.add(g, L.G_NEXT, 1) < 1) Atomics.add(g, L.G_DONE, 1);
        break;
      }
    }
    this.waitDone(1);
    Atomics.store(g, L.G_STATE, L.CLOSED);
    return (t1 - t0) * 1000;
  }
}
