/**
 * Runs a GEMM peer in a worker_thread of its own (`module`: a peer module of this folder,
 * without its extension). For peers whose settings are fixed per
 * module instance: onnxruntime-web reads env.wasm.numThreads once, so its two-thread run
 * needs a second instance beside the one-thread one. The case's `timeBatch` times the
 * calls inside the worker (see peer-worker.ts).
 */
import { runtime } from "@backplane/core";
import { builtinModule } from "@backplane/core/cpu";
import { type GemmPeer, reason } from "./types.ts";

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  reason?: string;
}

/**
 * Node runs the suites through tsx, whose loader a worker does not get from execArgv
 * (Node 20 reports .ts as an unknown extension): the worker registers it itself, then
 * imports the entry. Bun and Deno run TypeScript themselves.
 */
function viaTsx(entry: string): string {
  const api = import.meta.resolve("tsx/esm/api");
  return `(async () => {
    (await import(${JSON.stringify(api)})).register();
    await import(${JSON.stringify(entry)});
  })();`;
}

export async function openInWorker(
  module: string,
  exportName: string,
  args: unknown[],
): Promise<GemmPeer | string> {
  const wt = builtinModule<typeof import("node:worker_threads")>("node:worker_threads");
  if (!wt) return "no node:worker_threads in this runtime";
  let worker: import("node:worker_threads").Worker;
  try {
    // From source the modules are .ts files, from the built package .js files.
    const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
    const workerData = { module: new URL(module + ext, import.meta.url).href, exportName, args };
    const entry = new URL(`./peer-worker${ext}`, import.meta.url);
    worker =
      runtime().name === "node" && ext === ".ts"
        ? new wt.Worker(viaTsx(entry.href), { eval: true, workerData })
        : new wt.Worker(entry, { workerData });
  } catch (err) {
    return `cannot start a worker: ${reason(err)}`;
  }
  const opened = await new Promise<{ ready: boolean; info?: string; reason?: string }>(
    (resolve) => {
      worker.once("message", resolve);
      worker.once("error", (err) => resolve({ ready: false, reason: reason(err) }));
    },
  );
  if (!opened.ready) {
    await worker.terminate();
    return opened.reason ?? "the worker could not open the peer";
  }
  // A suite that forgets close() must still exit: the worker holds the loop open only
  // while a call is pending.
  worker.unref();
  let nextId = 1;
  const pending = new Map<number, (r: Reply) => void>();
  worker.on("message", (r: Reply) => pending.get(r.id)?.(r));
  worker.on("error", (err) => {
    for (const settle of pending.values())
      settle({ id: 0, ok: false, reason: `worker died: ${reason(err)}` });
  });
  const call = (req: Record<string, unknown>, transfer?: ArrayBuffer[]) =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      if (pending.size === 0) worker.ref();
      pending.set(id, (r) => {
        pending.delete(id);
        if (pending.size === 0) worker.unref();
        if (r.ok) resolve(r.value);
        else reject(new Error(r.reason));
      });
      worker.postMessage({ ...req, id }, transfer ?? []);
    });
  return {
    info: `${opened.info} (in a worker_thread of its own)`,
    async prepare(n, a, b) {
      await call({ op: "prepare", n, a: a.slice(), b: b.slice() });
      return {
        run: () => call({ op: "time", count: 1 }),
        timeBatch: (count: number) => call({ op: "time", count }) as Promise<number>,
        result: () => call({ op: "result" }) as Promise<Float32Array>,
        dispose: async () => {
          await call({ op: "dispose" });
        },
      };
    },
    async close() {
      await call({ op: "close" });
      await worker.terminate();
    },
  };
}
