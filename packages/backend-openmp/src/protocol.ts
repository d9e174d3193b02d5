/**
 * The shared-memory protocol between the calling thread and the pool's workers.
 *
 * One pool-wide control block (`ctl`, a SharedArrayBuffer) holds the task being run and
 * its counters; each worker has a control block of its own (`slot`) with its wake word,
 * its state and the text of its last error. Waking a worker is an Atomics.add +
 * Atomics.notify on its wake word: no postMessage. Strings (module id, export name, error
 * text) are stored as UTF-16 code units, so nothing needs a TextDecoder over shared memory.
 *
 * The same numbers are spliced into the worker's source (worker-source.ts), so both
 * sides always agree.
 */

export const LAYOUT = {
  // ---- pool control block: Int32 words ----
  /** CLOSED (0) or OPEN (1): whether threads may join the current task. */
  G_STATE: 0,
  G_EPOCH: 1,
  /** Next chunk to take (Atomics.add); >= total means none left. */
  G_NEXT: 2,
  /** Chunks finished (run, failed, or given up by a dying worker). */
  G_DONE: 3,
  G_TOTAL: 4,
  /** Next thread index (the caller is 0; workers take 1, 2...). */
  G_TID: 5,
  /** Workers inside the task (they read its description); the next task waits for 0. */
  G_INSIDE: 6,
  /** 0, the id of the first worker that failed, or -1 when the caller's own chunk failed. */
  G_FAILED: 7,
  /** Module generation a worker must have loaded to join (the task's module's). */
  G_MODGEN: 8,
  /** How long workers spin on their wake word before sleeping, in microseconds. */
  G_SPIN_US: 9,
  /** Set by the "stamp" debug function (wake-latency measurements). */
  G_STAMPED: 10,
  // task description
  T_ITEMS: 16,
  T_SIZE: 17,
  T_THREADS: 18,
  T_NARGS: 19,
  T_COUNTARG: 20,
  T_NTARGS: 21,
  T_FNID: 22,
  T_MODLEN: 23,
  T_FNLEN: 24,
  /** Int32 words: the argument index of each per-thread argument. */
  T_TARG_INDEX: 32,
  // Uint16 units: module id then export name
  STR_OFF: 128,
  STR_MAX: 512,
  // Float64 units
  F_ARGS: 192,
  F_STEP: 256,
  F_TSTRIDE: 320,
  F_STAMP: 340,
  MAX_ARGS: 64,
  MAX_THREAD_ARGS: 16,
  CTL_BYTES: 4096,

  // ---- per-worker control block: Int32 words ----
  /** Bumped by the caller to wake the worker. */
  S_WAKE: 0,
  S_STATE: 16,
  /** 1 while the worker is inside a task. */
  S_INSIDE: 17,
  /** Chunk index + 1 while the worker runs a chunk, else 0. */
  S_HOLD: 18,
  /** Module generation the worker has loaded. */
  S_MODGEN: 19,
  /** Length of the error text (Uint16 units from ERR_OFF_BYTES). */
  S_ERRLEN: 20,
  /** Thread index the worker had in its last task. */
  S_TID: 21,
  /** Set to 1 once the worker has started (it then counts as a death, not a failed start). */
  S_STARTED: 22,
  /** 1 while the worker sleeps (or is about to) on its wake word: only then is a notify needed. */
  S_SLEEP: 23,
  ERR_OFF_BYTES: 128,
  ERR_CHARS: 960,
  SLOT_BYTES: 2048,

  // states
  CLOSED: 0,
  OPEN: 1,
  STARTING: 0,
  READY: 1,
  DEAD: 2,
  STOPPING: 3,
} as const;

/** The pseudo-module of test hooks (never a WASM module): see worker-source.ts. */
export const DEBUG_MODULE = "backend-openmp/debug";
