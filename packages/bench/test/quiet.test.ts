/**
 * The wait between samples: it must see a thread that keeps spinning after a call (what an
 * OpenMP pool does for milliseconds), in this process and in a peer's Python server.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { PYTHON_UNTIL_QUIET, untilQuiet } from "../src/quiet.ts";

const linux = existsSync("/proc/thread-self");
const python = spawnSync("python3", ["-c", "pass"]).status === 0;
if (!python) console.log("[bench] the Python until_quiet test skipped: python3 is not installed");

/** A worker that spins for `ms` once it has said it started. */
async function spinningWorker(ms: number): Promise<Worker> {
  const source = `const { parentPort } = require("node:worker_threads");
    parentPort.postMessage("started");
    const end = Date.now() + ${ms};
    while (Date.now() < end) {}`;
  const worker = new Worker(source, { eval: true });
  await new Promise((resolve) => worker.once("message", resolve));
  return worker;
}

describe("untilQuiet", () => {
  (linux ? it : it.skip)("waits while another thread of the process runs", async () => {
    const worker = await spinningWorker(150);
    const t0 = performance.now();
    await untilQuiet(1000);
    const waited = performance.now() - t0;
    await worker.terminate();
    expect(waited).toBeGreaterThan(100);
  });

  it("returns by its deadline when a thread never stops", async () => {
    const worker = await spinningWorker(5000);
    const t0 = performance.now();
    await untilQuiet(100);
    const waited = performance.now() - t0;
    await worker.terminate();
    expect(waited).toBeGreaterThanOrEqual(99);
    expect(waited).toBeLessThan(2000);
  });
});

(python ? describe : describe.skip)("until_quiet, the Python server's wait", () => {
  it("waits while another thread of the server runs", () => {
    const script = `${PYTHON_UNTIL_QUIET}
import threading
started = threading.Event()
def spin():
    started.set()
    end = time.perf_counter() + 0.15
    while time.perf_counter() < end:
        pass
t = threading.Thread(target=spin)
t.start()
started.wait()
t0 = time.perf_counter()
until_quiet(1.0)
print(time.perf_counter() - t0)
t.join()`;
    const r = spawnSync("python3", ["-c", script], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    // The spinning thread holds the GIL in turns, but it runs until its 150 ms are up.
    expect(Number(r.stdout)).toBeGreaterThan(linux ? 0.1 : 0);
  });
});
