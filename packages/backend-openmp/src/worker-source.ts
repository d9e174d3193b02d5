/**
 * The worker's code, as a self-contained string of plain JavaScript: started with
 * `new Worker(code, { eval: true })` (worker_threads: Node, Bun, Deno) or from a Blob URL
 * (Web Workers), so it loads the same way from src/ (TypeScript, tests) and from dist/.
 *
 * What a worker does:
 * - instantiates every registered WASM module on the one shared CPU memory
 *   (`{ env: { memory, abort } }`), and the modules posted to it later;
 * - waits for its wake word (spinning G_SPIN_US microseconds, then Atomics.wait in slices
 *   of 20 ms, between which its event loop runs, so postMessage'd modules still arrive);
 * - when woken, joins the open task: takes a thread index, then chunks, until none is left;
 * - records a failure (a throw, a trap, an exit, self.close()) in its control block, so
 *   the caller, who may be blocked in Atomics.wait, learns of it without an event.
 */
import { DEBUG_MODULE, LAYOUT } from "./protocol.ts";

const BODY = `
let g, gf, gs, s, se, memory, workerId = 0;
let loadedGen = 0;
let closing = false;
let post = function () {};
let exitWorker = function () {};
const instances = new Map();
const failedModules = new Map();
let fnCache = new Map();
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function describe(e) {
  if (e !== null && typeof e === "object" && "message" in e) return (e.name || "Error") + ": " + e.message;
  return String(e);
}

function writeError(text) {
  const n = Math.min(text.length, L.ERR_CHARS);
  for (let i = 0; i < n; i++) se[i] = text.charCodeAt(i);
  Atomics.store(s, L.S_ERRLEN, n);
}

function readString(off, len) {
  let out = "";
  for (let i = 0; i < len; i++) out += String.fromCharCode(gs[off + i]);
  return out;
}

function instantiate(id, module) {
  try {
    const abort = function (_msg, _file, line, col) {
      throw new Error(id + ": WASM kernel aborted at line " + line + ":" + col);
    };
    const instance = new WebAssembly.Instance(module, { env: { memory: memory, abort: abort } });
    instances.set(id, instance.exports);
    failedModules.delete(id);
  } catch (e) {
    instances.delete(id);
    failedModules.set(id, describe(e));
  }
  fnCache = new Map();
}

function now() {
  return performance.timeOrigin + performance.now();
}

function debugFn(name) {
  if (name === "exit") return function () { exitWorker(); };
  if (name === "throw") return function () { throw new Error("thrown on purpose (" + DEBUG + ".throw)"); };
  if (name === "sleep" || name === "hang") return function (micros) { Atomics.wait(sleeper, 0, 0, micros / 1000); };
  if (name === "noop") return function () {};
  if (name === "stamp") return function () {
    gf[L.F_STAMP] = now();
    Atomics.store(g, L.G_STAMPED, 1);
  };
  return undefined;
}

// The export the task calls, or a string saying why this worker cannot call it.
function resolve() {
  const fnId = g[L.T_FNID];
  const cached = fnCache.get(fnId);
  if (cached !== undefined) return cached;
  const modLen = g[L.T_MODLEN];
  const id = readString(L.STR_OFF, modLen);
  const name = readString(L.STR_OFF + modLen, g[L.T_FNLEN]);
  let fn;
  if (id === DEBUG) fn = debugFn(name);
  else {
    const exports = instances.get(id);
    if (exports === undefined) {
      const why = failedModules.get(id);
      return why !== undefined
        ? "module " + id + " could not be instantiated in this worker: " + why
        : "module " + id + " was never delivered to this worker";
    }
    fn = exports[name];
  }
  if (typeof fn !== "function") return "module " + id + " has no export " + name;
  fnCache.set(fnId, fn);
  return fn;
}

function leave() {
  if (Atomics.exchange(s, L.S_INSIDE, 0) === 1 && Atomics.sub(g, L.G_INSIDE, 1) === 1) {
    Atomics.notify(g, L.G_INSIDE);
  }
}

// Records that this worker is gone (exit, self.close(), an internal error). Idempotent.
function markDead(reason) {
  if (closing || s === undefined) return;
  closing = true;
  const stopping = Atomics.load(s, L.S_STATE) === L.STOPPING;
  // DEAD before the chunk is given back: a caller that stops waiting at that G_DONE must
  // see a death (and replace the worker), however late this thread runs the next line.
  Atomics.store(s, L.S_STATE, L.DEAD);
  const hold = Atomics.exchange(s, L.S_HOLD, 0);
  if (hold !== 0) {
    writeError(reason + " while running chunk " + (hold - 1));
    Atomics.compareExchange(g, L.G_FAILED, 0, workerId);
    Atomics.add(g, L.G_DONE, 1);
  } else if (!stopping) {
    writeError(reason);
  }
  leave();
  Atomics.notify(g, L.G_DONE);
  Atomics.notify(g, L.G_INSIDE);
}

const NEED_MODULES = 1;

// Joins the open task, if any: returns NEED_MODULES when the task's module has not
// reached this worker yet (it then yields to its event loop and tries again).
function participate() {
  Atomics.add(g, L.G_INSIDE, 1);
  Atomics.store(s, L.S_INSIDE, 1);
  try {
    if (Atomics.load(g, L.G_STATE) !== L.OPEN) return 0;
    if (loadedGen < Atomics.load(g, L.G_MODGEN)) return NEED_MODULES;
    const tid = Atomics.add(g, L.G_TID, 1);
    if (tid >= g[L.T_THREADS]) return 0;
    Atomics.store(s, L.S_TID, tid);
    const fn = resolve();
    const total = g[L.G_TOTAL];
    const items = g[L.T_ITEMS];
    const size = g[L.T_SIZE];
    const nargs = g[L.T_NARGS];
    const countArg = g[L.T_COUNTARG];
    const ntargs = g[L.T_NTARGS];
    const base = new Array(nargs);
    const step = new Array(nargs);
    for (let j = 0; j < nargs; j++) {
      base[j] = gf[L.F_ARGS + j];
      step[j] = gf[L.F_STEP + j];
    }
    const a = new Array(nargs);
    for (;;) {
      if (closing || Atomics.load(g, L.G_FAILED) !== 0) break;
      const c = Atomics.add(g, L.G_NEXT, 1);
      if (c >= total) break;
      Atomics.store(s, L.S_HOLD, c + 1);
      const i0 = c * size;
      const count = Math.min(size, items - i0);
      let error;
      if (typeof fn === "string") error = fn;
      else {
        // The same arithmetic, in the same order, as chunkArgs() in @backplane/core.
        for (let j = 0; j < nargs; j++) a[j] = base[j] + i0 * step[j];
        if (countArg >= 0) a[countArg] = count;
        for (let t = 0; t < ntargs; t++) a[g[L.T_TARG_INDEX + t]] += tid * gf[L.F_TSTRIDE + t];
        try {
          fn.apply(null, a);
        } catch (e) {
          error = describe(e);
        }
      }
      // A dying worker (exit, self.close()) has already given its chunk back.
      if (closing || Atomics.exchange(s, L.S_HOLD, 0) === 0) break;
      if (error !== undefined) {
        writeError(error + " (chunk " + c + ": items " + i0 + ".." + (i0 + count) + ", thread " + tid + ")");
        Atomics.compareExchange(g, L.G_FAILED, 0, workerId);
        Atomics.add(g, L.G_DONE, 1);
        Atomics.notify(g, L.G_DONE);
        break;
      }
      if (Atomics.add(g, L.G_DONE, 1) + 1 >= total || Atomics.load(g, L.G_FAILED) !== 0) {
        Atomics.notify(g, L.G_DONE);
      }
    }
    return 0;
  } finally {
    leave();
  }
}

function macrotask() {
  return new Promise(function (r) { setTimeout(r, 0); });
}

async function loop() {
  let seen = Atomics.load(s, L.S_WAKE);
  for (;;) {
    let v = Atomics.load(s, L.S_WAKE);
    if (v === seen) {
      const spin = Atomics.load(g, L.G_SPIN_US) / 1000;
      if (spin > 0) {
        // The clock is read once every 256 polls: performance.now() can cost microseconds
        // (a syscall where the clock source has no vDSO), far more than a poll.
        const end = performance.now() + spin;
        let n = 0;
        while ((v = Atomics.load(s, L.S_WAKE)) === seen) {
          if ((++n & 255) === 0 && performance.now() >= end) break;
        }
      }
    }
    if (v === seen) {
      // Say so before sleeping: a caller that then bumps the wake word also notifies it
      // (and one that bumped it just before makes the wait return at once).
      Atomics.store(s, L.S_SLEEP, 1);
      // Blocked in the kernel (Atomics.wait), a wake is a futex wake. Waiting through the
      // event loop (Atomics.waitAsync) left a worker woken after an idle spell sharing the
      // caller's core for 15 ms and more on this 2-vCPU VM (2-thread calls as slow as one
      // thread); every 20 ms the event loop runs, so posted modules still arrive.
      if (Atomics.wait(s, L.S_WAKE, seen, 20) === "timed-out") await macrotask();
      Atomics.store(s, L.S_SLEEP, 0);
      continue;
    }
    seen = v;
    if (closing) return;
    const state = Atomics.load(s, L.S_STATE);
    if (state === L.STOPPING || state === L.DEAD) {
      // Asked to stop (or given up on by the pool): leave quietly.
      closing = true;
      exitWorker();
      return;
    }
    while (participate() === NEED_MODULES && !closing) await macrotask();
  }
}

function onMessage(m) {
  if (m === null || typeof m !== "object") return;
  if (m.type === "module") {
    instantiate(m.id, m.module);
    if (m.gen > loadedGen) loadedGen = m.gen;
    Atomics.store(s, L.S_MODGEN, loadedGen);
    // (so the pool's moduleFailures() also knows of modules that came after "ready")
    post({ type: "loaded", id: m.id, error: failedModules.get(m.id) });
  }
}

function start(data) {
  g = new Int32Array(data.ctl);
  gf = new Float64Array(data.ctl);
  gs = new Uint16Array(data.ctl);
  s = new Int32Array(data.slot);
  se = new Uint16Array(data.slot, L.ERR_OFF_BYTES, L.ERR_CHARS);
  workerId = data.id;
  memory = data.memory;
  for (const m of data.modules) instantiate(m.id, m.module);
  loadedGen = data.gen;
  Atomics.store(s, L.S_MODGEN, loadedGen);
  Atomics.store(s, L.S_STARTED, 1);
  Atomics.store(s, L.S_STATE, L.READY);
  post({ type: "ready", failed: Array.from(failedModules.entries()) });
  loop().catch(function (e) {
    markDead("internal error: " + describe(e));
    exitWorker();
  });
}
`;

const NODE_PROLOGUE = `
const wt = typeof process.getBuiltinModule === "function"
  ? process.getBuiltinModule("node:worker_threads")
  : require("node:worker_threads");
post = function (m) { wt.parentPort.postMessage(m); };
exitWorker = function () { process.exit(7); };
process.on("exit", function (code) {
  markDead("the worker exited (exit code " + code + ")");
});
wt.parentPort.on("message", onMessage);
start(wt.workerData);
`;

const WEB_PROLOGUE = `
post = function (m) { self.postMessage(m); };
// (Bun's Web Workers have no close(): process.exit() ends just the worker there.)
const realClose = typeof self.close === "function"
  ? self.close.bind(self)
  : function () { process.exit(0); };
if (typeof process !== "undefined" && typeof process.on === "function") {
  try {
    process.on("exit", function (code) { markDead("the worker exited (exit code " + code + ")"); });
  } catch (_) {}
}
const closeSelf = function () {
  markDead("the worker closed itself (self.close())");
  realClose();
};
try { self.close = closeSelf; } catch (_) {}
exitWorker = function () { closeSelf(); };
self.onmessage = function (e) {
  const m = e.data;
  if (m !== null && typeof m === "object" && m.type === "init") start(m);
  else onMessage(m);
};
`;

export type WorkerKind = "worker_threads" | "web";

/** The worker's complete source for one kind of worker. */
export function workerSource(kind: WorkerKind): string {
  return (
    `"use strict";\nconst L = ${JSON.stringify(LAYOUT)};\nconst DEBUG = ${JSON.stringify(DEBUG_MODULE)};\n` +
    BODY +
    (kind === "web" ? WEB_PROLOGUE : NODE_PROLOGUE)
  );
}
