// The Web Worker flavour of the pool (what browsers use), run where this runtime has the
// Worker constructor (Deno, Bun); Node has none, so there the test only says so.
import { WorkerError } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { DEBUG_MODULE, RUNTIME_MODULE } from "../src/index.ts";
import { eventually, f64Buffer, newPool, withHelperWait } from "./helpers.ts";

const hasWorker = typeof globalThis.Worker === "function";

describe("Web Workers", () => {
  it(`run tasks, report a worker that closes itself, and shut down (${hasWorker ? "runs here" : "no Worker here: skipped"})`, async () => {
    if (!hasWorker) return;
    const pool = newPool({ workers: "web" });
    try {
      expect(pool.kind).toBe("web");
      expect(await pool.ready(2)).toBe(2);
      const n = 30_000;
      const buf = f64Buffer(n);
      const iota = () =>
        pool.run(
          {
            module: RUNTIME_MODULE,
            fn: "iotaF64",
            args: [buf.ptr, 0, 0],
            step: [8, 1, 0],
            countArg: 2,
            items: n,
            schedule: "dynamic",
            chunk: 100,
          },
          2,
        );
      // A worker takes chunks: each try waits up to 200 ms for one to claim a chunk, and
      // the event loop turns between tries (a Web Worker may still be waiting for a WASM
      // module posted to it, which a caller blocked in the run would never let arrive).
      const took = await eventually(() => {
        const before = pool.stats().workerChunks;
        buf.view().fill(0);
        withHelperWait(pool, iota, 200);
        expect(buf.view().every((x, i) => x === i)).toBe(true);
        return pool.stats().workerChunks > before;
      });
      expect(took).toBe(true);
      // self.close() mid-task
      let error: unknown;
      const hit = await eventually((effort) => {
        try {
          pool.run(
            {
              module: DEBUG_MODULE,
              fn: "exit",
              args: [500 * effort],
              items: 40,
              schedule: "dynamic",
            },
            2,
          );
          return false;
        } catch (e) {
          error = e;
          return true;
        }
      });
      expect(hit).toBe(true);
      expect(error).toBeInstanceOf(WorkerError);
      expect((error as Error).message).toMatch(/closed itself \(self\.close\(\)\)/);
      buf.view().fill(0);
      iota();
      expect(buf.view().every((x, i) => x === i)).toBe(true);
      expect(await pool.ready(2)).toBe(2);
      buf.free();
    } finally {
      await pool.close();
    }
    expect(pool.stats().workers).toBe(0);
  });
});
