/**
 * The worker side of in-worker.ts: opens one GEMM peer in this worker_thread and answers
 * the main thread's requests. Timing happens here, so message passing costs the peer
 * nothing: a "time" request runs the case `count` times and answers milliseconds per call.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { GemmCase, GemmPeer } from "./types.ts";
import { reason } from "./types.ts";

type Request =
  | { id: number; op: "prepare"; n: number; a: Float32Array; b: Float32Array }
  | { id: number; op: "result" }
  | { id: number; op: "time"; count: number }
  | { id: number; op: "dispose" }
  | { id: number; op: "close" };

const { module, exportName, args } = workerData as {
  module: string;
  exportName: string;
  args: unknown[];
};
const port = parentPort!;
let peer: GemmPeer | undefined;
let current: GemmCase | undefined;

async function handle(req: Request): Promise<unknown> {
  switch (req.op) {
    case "prepare":
      current = await peer!.prepare(req.n, req.a, req.b);
      return undefined;
    case "result":
      return current!.result();
    case "time": {
      const t0 = performance.now();
      for (let i = 0; i < req.count; i++) {
        const r = current!.run();
        if (r instanceof Promise) await r;
      }
      return (performance.now() - t0) / req.count;
    }
    case "dispose":
      await current?.dispose();
      current = undefined;
      return undefined;
    case "close":
      await peer?.close?.();
      return undefined;
  }
}

try {
  const opened = (await import(module))[exportName](...args) as Promise<GemmPeer | string>;
  const p = await opened;
  if (typeof p === "string") port.postMessage({ ready: false, reason: p });
  else {
    peer = p;
    port.postMessage({ ready: true, info: p.info });
  }
} catch (err) {
  port.postMessage({ ready: false, reason: reason(err) });
}

port.on("message", async (req: Request) => {
  try {
    port.postMessage({ id: req.id, ok: true, value: await handle(req) });
  } catch (err) {
    port.postMessage({ id: req.id, ok: false, reason: reason(err) });
  }
});
