/**
 * Starting one worker from the worker source, on each kind of runtime:
 * - worker_threads (Node, Bun, Deno): `new Worker(code, { eval: true, workerData })`,
 *   unref'd so an idle pool never keeps a script alive;
 * - Web Workers (browsers; Deno or Bun on request): a module Worker from a Blob URL,
 *   initialised by a first message.
 */
import { ArgumentError } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";
import { type WorkerKind, workerSource } from "./worker-source.ts";

const g = host;

export interface WorkerInit {
  id: number;
  ctl: SharedArrayBuffer;
  slot: SharedArrayBuffer;
  memory: WebAssembly.Memory;
  modules: { id: string; module: WebAssembly.Module }[];
  gen: number;
}

export interface WorkerEvents {
  message(m: unknown): void;
  error(message: string): void;
  exit(code: number): void;
}

export interface WorkerHandle {
  kind: WorkerKind;
  /** worker_threads' threadId, when there is one. */
  threadId?: number;
  post(m: unknown): void;
  terminate(): void;
}

/** The worker_threads module where the runtime has one (Node, Bun, Deno), else undefined. */
export function workerThreadsModule(): typeof import("node:worker_threads") | undefined {
  try {
    const wt = builtinModule<typeof import("node:worker_threads")>("node:worker_threads");
    return typeof wt?.Worker === "function" ? wt : undefined;
  } catch {
    return undefined;
  }
}

export function hasWebWorkers(): boolean {
  return (
    typeof globalThis.Worker === "function" &&
    typeof globalThis.Blob === "function" &&
    typeof globalThis.URL === "function"
  );
}

let blobUrl: string | undefined;

function spawnWorkerThread(init: WorkerInit, on: WorkerEvents): WorkerHandle {
  const wt = workerThreadsModule();
  if (!wt) throw new ArgumentError("openmp: this runtime has no worker_threads");
  const w = new wt.Worker(workerSource("worker_threads"), {
    eval: true,
    workerData: init,
    // No loaders or flags of this process (tsx, --import...): the worker imports nothing.
    ...(g.process?.release?.name === "node" && !g.Bun && !g.Deno ? { execArgv: [] } : {}),
  });
  w.on("message", (m: unknown) => on.message(m));
  w.on("error", (e: Error) => on.error(`${e?.name ?? "Error"}: ${e?.message ?? String(e)}`));
  w.on("exit", (code: number) => on.exit(code));
  // After the listeners: adding a "message" listener refs the worker's port again.
  w.unref();
  return {
    kind: "worker_threads",
    threadId: w.threadId,
    post: (m) => w.postMessage(m),
    terminate: () => {
      void w.terminate();
    },
  };
}

function spawnWebWorker(init: WorkerInit, on: WorkerEvents): WorkerHandle {
  blobUrl ??= URL.createObjectURL(new Blob([workerSource("web")], { type: "text/javascript" }));
  const w = new Worker(blobUrl, { type: "module", name: `backplane-openmp-${init.id}` });
  let gone = false;
  w.onmessage = (e: MessageEvent) => on.message(e.data);
  w.onerror = (e: ErrorEvent) => {
    // An uncaught error in a worker would otherwise reach this thread (Deno: as a crash).
    e.preventDefault?.();
    on.error(e.message ?? "error in worker");
  };
  w.postMessage({ type: "init", ...init });
  return {
    kind: "web",
    post: (m) => w.postMessage(m),
    terminate: () => {
      if (gone) return;
      gone = true;
      w.terminate();
      // Web Workers have no exit event: report it ourselves.
      queueMicrotask(() => on.exit(0));
    },
  };
}

export function spawnWorker(kind: WorkerKind, init: WorkerInit, on: WorkerEvents): WorkerHandle {
  return kind === "web" ? spawnWebWorker(init, on) : spawnWorkerThread(init, on);
}
