import { backends, WorkerError } from "@backplane/core";
import {
  chunksOf,
  cpuMemory,
  cpuThreads,
  host,
  type ParallelTask,
  parallelFor,
  parallelService,
  registerWasmModule,
  wasmKernelImports,
} from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { DEBUG_MODULE, openmpPool, RUNTIME_MODULE } from "../src/index.ts";
import { eventually, f64Buffer, fillTask, newPool, readyPool, runtimeName } from "./helpers.ts";

describe("the pool", () => {
  it("is installed as the core's ParallelService and sizes itself to openmp.numThreads", async () => {
    const pool = await readyPool(2);
    expect(parallelService()).toBe(pool);
    expect(backends.openmp.isEnabled()).toBe(true);
    expect(pool.threads()).toBeGreaterThanOrEqual(2);
    using _ = backends.openmp.numThreadsScope(2);
    expect(backends.openmp.getNumThreads()).toBe(2);
    expect(cpuThreads()).toBe(2);
    const cap = backends.openmp.capability() as { workers: number; spinMicros: number };
    expect(cap.workers).toBeGreaterThanOrEqual(1);
    expect(typeof cap.spinMicros).toBe("number");
  });

  it("runs static and dynamic tasks correctly on 1 and 2 threads", async () => {
    const pool = await readyPool(2);
    const n = 100_003;
    const buf = f64Buffer(n);
    try {
      for (const threads of [1, 2]) {
        for (const schedule of ["static", "dynamic"] as const) {
          for (const chunk of [1, 7, 4096]) {
            if (schedule === "static" && chunk !== 1) continue;
            const task: ParallelTask = {
              module: RUNTIME_MODULE,
              fn: "iotaF64",
              args: [buf.ptr, 0, 0],
              step: [8, 1, 0],
              countArg: 2,
              items: n,
              schedule,
              chunk,
            };
            buf.view().fill(-1);
            pool.run(task, threads);
            const v = buf.view();
            let bad = 0;
            for (let i = 0; i < n; i++) if (v[i] !== i) bad++;
            expect(bad, `${schedule} chunk ${chunk} threads ${threads}`).toBe(0);
            // Through the core, the way CPU kernels call it.
            parallelFor(
              { ...task, fn: "scaleF64", args: [buf.ptr, 0, 2], step: [8, 0, 0], countArg: 1 },
              threads,
            );
            const w = buf.view();
            for (let i = 0; i < n; i++) if (w[i] !== 2 * i) bad++;
            expect(bad, `scale ${schedule} threads ${threads}`).toBe(0);
          }
        }
      }
    } finally {
      buf.free();
    }
  });

  it("gives each thread its own per-thread arguments and the chunks chunksOf() describes", async () => {
    const pool = await readyPool(2);
    // Each chunk fills [i0, i0 + count) of `out` with its i0 (so chunk boundaries show),
    // and adds 1 to the thread's own counter slot (threadArgs).
    const n = 1000;
    const out = f64Buffer(n);
    const counters = f64Buffer(8);
    try {
      for (const task of [
        { schedule: "static", chunk: undefined },
        { schedule: "dynamic", chunk: 33 },
      ] as const) {
        counters.view().fill(0);
        const t: ParallelTask = {
          module: RUNTIME_MODULE,
          fn: "addF64",
          args: [counters.ptr, 1, 1],
          threadArgs: [{ index: 0, stride: 8 }],
          items: n,
          schedule: task.schedule,
          chunk: task.chunk,
        };
        pool.run(t, 2);
        const c = counters.view();
        // One add per chunk, on thread 0 or 1 only.
        expect(c[0] + c[1]).toBe(chunksOf(t, 2).length);
        expect(c[2]).toBe(0);
        // Chunk starts: fill each chunk with its own first index.
        out.view().fill(-1);
        pool.run(
          {
            ...t,
            fn: "iotaF64",
            args: [out.ptr, 0, 0],
            step: [8, 1, 0],
            countArg: 2,
            threadArgs: undefined,
          },
          2,
        );
        const v = out.view();
        for (const [i0, count] of chunksOf(t, 2)) {
          expect(v[i0]).toBe(i0);
          expect(v[i0 + count - 1]).toBe(i0 + count - 1);
        }
      }
    } finally {
      out.free();
      counters.free();
    }
  });

  it("follows modules registered after the workers started", async () => {
    const pool = await readyPool(2);
    // A second instance of runtime.wasm under a new id: the workers learn of it by message.
    const mod = new WebAssembly.Module(
      await readWasm(new URL("../wasm/runtime.wasm", import.meta.url)),
    );
    const id = `backend-openmp/test-late-${Math.random().toString(36).slice(2)}`;
    registerWasmModule(id, mod, new WebAssembly.Instance(mod, wasmKernelImports(id)));
    // Each attempt gives the worker more work to join (on a loaded machine the caller can
    // finish a small task alone before a sleeping worker wakes).
    const most = 50_000 * 16;
    const buf = f64Buffer(most);
    try {
      const ok = await eventually((effort) => {
        const n = 50_000 * Math.min(effort, 16);
        const before = pool.stats().workerChunks;
        buf.view().fill(0);
        pool.run(
          {
            module: id,
            fn: "iotaF64",
            args: [buf.ptr, 0, 0],
            step: [8, 1, 0],
            countArg: 2,
            items: n,
            schedule: "dynamic",
            chunk: 64,
          },
          2,
        );
        const v = buf.view();
        let bad = 0;
        for (let i = 0; i < n; i++) if (v[i] !== i) bad++;
        if (bad) return false;
        return pool.stats().workerChunks > before;
      });
      expect(ok).toBe(true);
      expect(pool.moduleFailures()).toEqual([]);
    } finally {
      buf.free();
    }
  });

  it("runs the calling thread's share itself when no worker is ready (threads > pool)", () => {
    const pool = openmpPool()!;
    const n = 777;
    const buf = f64Buffer(n);
    try {
      pool.run(fillTask(buf.ptr, 5, n), 64);
      expect(buf.view().every((x) => x === 5)).toBe(true);
    } finally {
      buf.free();
    }
  });

  it("rejects unknown modules and exports the way the core does", () => {
    const pool = openmpPool()!;
    expect(() => pool.run({ module: "nope/nothing", fn: "f", args: [], items: 4 }, 2)).toThrow(
      /no WASM module/,
    );
    expect(() =>
      pool.run({ module: RUNTIME_MODULE, fn: "nothing", args: [], items: 4 }, 2),
    ).toThrow(/has no export nothing/);
  });
});

describe("failures", () => {
  const scratch = () => cpuMemory().allocate(64);

  it("a worker that traps makes the run throw a WorkerError; the next run succeeds", async () => {
    const pool = await readyPool(2);
    const s = scratch();
    let error: unknown;
    const hit = await eventually((effort) => {
      try {
        pool.run(
          {
            module: RUNTIME_MODULE,
            fn: "trapOffCaller",
            args: [0, 20_000 * effort, s],
            threadArgs: [{ index: 0, stride: 1 }],
            items: 64,
            schedule: "dynamic",
            label: "trap test",
          },
          2,
        );
        return false; // the caller took every chunk before a worker woke: try again
      } catch (e) {
        error = e;
        return true;
      }
    });
    expect(hit).toBe(true);
    expect(error).toBeInstanceOf(WorkerError);
    const msg = (error as Error).message;
    expect(msg).toMatch(/"trap test"/);
    expect(msg).toMatch(/backend-openmp\/runtime\.trapOffCaller/);
    expect(msg).toMatch(/worker \d+/);
    expect(msg).toMatch(/unreachable/i);
    // The worker is still alive (a trap is an exception) and the pool works.
    expect(pool.threads()).toBeGreaterThanOrEqual(2);
    const buf = f64Buffer(10_000);
    pool.run(fillTask(buf.ptr, 3, 10_000, 100), 2);
    expect(buf.view().every((x) => x === 3)).toBe(true);
    buf.free();
    cpuMemory().free(s);
  });

  it("a chunk that throws in a worker is a WorkerError naming it", async () => {
    const pool = await readyPool(2);
    let error: unknown;
    const hit = await eventually((effort) => {
      try {
        pool.run(
          {
            module: DEBUG_MODULE,
            fn: "throw",
            args: [200 * effort],
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
    expect((error as Error).message).toMatch(
      /backend-openmp\/debug\.throw.*worker \d+.*failed.*thrown on purpose/,
    );
  });

  it("a worker that exits mid-task is a WorkerError; it is replaced, and the next run succeeds", async () => {
    const pool = await readyPool(2);
    // Every worker the pool wants up first: one still starting could turn READY between
    // the snapshot and the checks below.
    await pool.ready();
    expect(pool.stats().starting).toBe(0);
    const deaths = pool.stats().deaths;
    const readyBefore = pool.readyWorkers();
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
            label: "exit test",
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
    const msg = (error as Error).message;
    expect(msg).toMatch(/"exit test"/);
    expect(msg).toMatch(/worker \d+ .*died/);
    expect(msg).toMatch(/exited|closed itself/);
    expect(pool.stats().deaths).toBe(deaths + 1);
    const dead = (error as { worker: number }).worker;
    expect(pool.slots.some((s) => s.id === dead)).toBe(false);
    // Until the replacement is ready, only live workers count.
    expect(pool.readyWorkers()).toBe(readyBefore - 1);
    expect(pool.threads()).toBe(readyBefore);
    // The next run succeeds at once (the caller takes what no worker takes)...
    const n = 20_000;
    const buf = f64Buffer(n);
    pool.run(
      {
        module: RUNTIME_MODULE,
        fn: "iotaF64",
        args: [buf.ptr, 0, 0],
        step: [8, 1, 0],
        countArg: 2,
        items: n,
        schedule: "dynamic",
        chunk: 500,
      },
      2,
    );
    expect(buf.view().every((x, i) => x === i)).toBe(true);
    // ...and the replacement comes up.
    expect(await pool.ready(2)).toBeGreaterThanOrEqual(2);
    buf.view().fill(0);
    pool.run(
      {
        module: RUNTIME_MODULE,
        fn: "iotaF64",
        args: [buf.ptr, 0, 0],
        step: [8, 1, 0],
        countArg: 2,
        items: n,
        schedule: "dynamic",
        chunk: 500,
      },
      2,
    );
    expect(buf.view().every((x, i) => x === i)).toBe(true);
    buf.free();
  });

  it("an error on the calling thread is rethrown as it is, after the workers finish", async () => {
    const pool = await readyPool(2);
    // trapOffCaller with thread index 0 for everybody (no threadArgs) never traps; with
    // a thread argument of 1 everywhere, the caller traps too.
    expect(() =>
      pool.run(
        {
          module: RUNTIME_MODULE,
          fn: "trapOffCaller",
          args: [1, 0, 0],
          items: 8,
          schedule: "dynamic",
        },
        2,
      ),
    ).toThrow(/unreachable/i);
  });
});

describe("stress", () => {
  it("10,000 tasks of random sizes: no deadlock, no wrong result", async () => {
    const pool = await readyPool(2);
    const max = 4000;
    const buf = f64Buffer(max);
    let seed = 12345;
    const rand = (k: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % k;
    };
    // (no wall-time bound: a deadlock is caught by the test timeout and the stall watchdog)
    const failures = pool.stats().failures;
    let tasks = 0;
    let wrong = 0;
    try {
      while (tasks < 10_000) {
        const n = 1 + rand(rand(8) === 0 ? max : 300);
        const threads = 1 + rand(3);
        const schedule = rand(2) === 0 ? "static" : "dynamic";
        const chunk = 1 + rand(rand(2) === 0 ? 8 : 600);
        const value = 1 + rand(100);
        const base = { step: [8, 0, 0], countArg: 1, items: n, schedule, chunk } as const;
        const task = (fn: string, args: number[]): ParallelTask => ({
          ...base,
          step: [...base.step],
          module: RUNTIME_MODULE,
          fn,
          args,
        });
        pool.run(task("fillF64", [buf.ptr, 0, 0]), threads);
        pool.run(task("addF64", [buf.ptr, 0, value]), threads);
        tasks += 2;
        if (rand(4) === 0) {
          pool.run(task("scaleF64", [buf.ptr, 0, 3]), threads);
          tasks++;
          const v = buf.view();
          for (let i = 0; i < n; i++) if (v[i] !== 3 * value) wrong++;
        } else {
          const v = buf.view();
          for (let i = 0; i < n; i++) if (v[i] !== value) wrong++;
        }
      }
    } finally {
      buf.free();
    }
    expect(wrong).toBe(0);
    // `failures` counts runs a chunk failed in (each also throws); the tests above add
    // some on purpose, so none of these runs may add one.
    expect(pool.stats().failures).toBe(failures);
  });
});

async function readWasm(url: URL): Promise<Uint8Array<ArrayBuffer>> {
  const g = host;
  if (g.Deno) return g.Deno.readFile(url);
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  return new Uint8Array(readFileSync(fileURLToPath(url)));
}

describe("process lifetime", () => {
  it("an idle pool does not keep the process alive", async () => {
    const { spawnSync } = await import("node:child_process");
    const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { env } = await import("node:process");
    const { fileURLToPath } = await import("node:url");
    const root = fileURLToPath(new URL("../../..", import.meta.url));
    const src = fileURLToPath(new URL("../src/index.ts", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "openmp-exit-"));
    try {
      const script = join(dir, "script.mts");
      writeFileSync(
        script,
        `import { openmpPool, RUNTIME_MODULE } from ${JSON.stringify(src)};
const pool = openmpPool();
await pool.ready(2);
pool.run({ module: RUNTIME_MODULE, fn: "fillF64", args: [65536, 0, 1], step: [8, 0, 0], countArg: 1, items: 64 }, 2);
console.log("done", pool.stats().workers);
`,
      );
      const g = host;
      const command =
        runtimeName === "deno"
          ? [
              g.Deno!.execPath(),
              ["run", "-A", "--no-check", "--config", join(root, "deno.json"), script],
            ]
          : runtimeName === "bun"
            ? [g.process!.execPath, [script]]
            : [g.process!.execPath, ["--import", "tsx", script]];
      const r = spawnSync(command[0] as string, command[1] as string[], {
        cwd: root,
        // A fixed size (one worker), not the machine's cores: /done 1/ holds on any machine.
        env: { ...env, OMP_NUM_THREADS: "2" },
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(r.stdout + r.stderr).toMatch(/done 1/);
      expect(r.signal).toBe(null); // not killed by the timeout: it exited on its own
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("stallTimeoutMs", () => {
  it("a worker that stops responding is given up on, and the pool goes on", async () => {
    const pool = newPool({ stallTimeoutMs: 200 });
    try {
      await pool.ready(2);
      let error: unknown;
      const t0 = performance.now();
      const hit = await eventually((effort) => {
        try {
          // Workers sleep 20 s in their chunk; this thread sleeps 0.3 ms in each of its own.
          pool.run(
            {
              module: DEBUG_MODULE,
              fn: "hang",
              args: [20_000_000, 300 * effort],
              items: 30,
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
      expect(performance.now() - t0).toBeLessThan(15_000);
      expect(error).toBeInstanceOf(WorkerError);
      expect((error as Error).message).toMatch(/made no progress for 200 ms/);
      // The worker given up on was inside the task when it was ended: it must be counted
      // out, or the next run waits for it until the watchdog (here 10 s) fires again.
      pool.stallTimeoutMs = 10_000;
      expect(await pool.ready(2)).toBe(2);
      const buf = f64Buffer(5000);
      const t1 = performance.now();
      pool.run(fillTask(buf.ptr, 9, 5000, 50), 2);
      expect(performance.now() - t1).toBeLessThan(5_000);
      expect(buf.view().every((x) => x === 9)).toBe(true);
      buf.free();
      expect(await pool.ready(2)).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("has a stall watchdog by default, and comes back after shutdown() (issue 21)", async () => {
    const pool = newPool();
    try {
      expect(pool.stallTimeoutMs).toBe(60_000);
      expect(await pool.ready(2)).toBe(2);
      await pool.shutdown();
      expect(pool.readyWorkers()).toBe(0);
      // Used again: the run is right (on whatever threads are up), and the workers return.
      const buf = f64Buffer(4000);
      pool.run(fillTask(buf.ptr, 7, 4000, 40), 2);
      expect(buf.view().every((x) => x === 7)).toBe(true);
      buf.free();
      expect(await pool.ready(2)).toBe(2);
      expect(pool.stats().workers).toBe(1);
    } finally {
      await pool.close();
    }
  });

  it("a thread-count scope ends with exactly the workers it started with (issue 21)", async () => {
    const pool = await readyPool(2);
    const before = pool.readyWorkers();
    const buf = f64Buffer(40_000);
    const task: ParallelTask = fillTask(buf.ptr, 3, 40_000, 400);
    try {
      await backends.withFlags({ openmp: { numThreads: 12 } }, async () => {
        // More threads than cores: the pool grows to 11 workers for the scope...
        expect(await pool.ready(12)).toBe(12);
        parallelFor(task, 12);
        expect(buf.view().every((x) => x === 3)).toBe(true);
      });
      // ...and is back to what it had when the scope closes, and still runs right.
      expect(pool.readyWorkers()).toBe(before);
      expect(pool.stats().starting).toBe(0);
      parallelFor({ ...task, args: [buf.ptr, 0, 5] }, 2);
      expect(buf.view().every((x) => x === 5)).toBe(true);
      {
        using _ = backends.openmp.numThreadsScope(4);
        expect(await pool.ready(4)).toBe(4);
      }
      expect(pool.readyWorkers()).toBe(before);
      // A 1-thread scope keeps the workers (no restart per op): they just sleep.
      const ids = pool.slots.map((w) => w.id).join();
      {
        using _ = backends.openmp.numThreadsScope(1);
        parallelFor({ ...task, args: [buf.ptr, 0, 6] }, 1);
      }
      expect(pool.readyWorkers()).toBe(before);
      expect(pool.slots.map((w) => w.id).join()).toBe(ids);
    } finally {
      buf.free();
    }
  });
});
