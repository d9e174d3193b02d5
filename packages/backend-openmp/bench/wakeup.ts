// Measures the pool's wake-up latency and the cost of an empty parallel task:
//   npx tsx packages/backend-openmp/bench/wakeup.ts        (Node)
//   bun packages/backend-openmp/bench/wakeup.ts
//   deno run -A --config deno.json packages/backend-openmp/bench/wakeup.ts
// Run it on a quiet machine: the numbers are microseconds and other load shows in them.

import { ready } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";
import { openmpPool } from "../src/index.ts";
import { measureEmptyTask, measureWakeLatency } from "./measure.ts";

const g = host;
const rtName = g.Bun
  ? `bun ${g.Bun.version}`
  : g.Deno
    ? `deno ${g.Deno.version.deno}`
    : `node ${g.process?.version}`;
const t0 = performance.now();
await ready();
const pool = openmpPool();
if (!pool) throw new Error("no pool here");
await pool.ready(2);
const startMs = performance.now() - t0;
const spin = pool.spinMicros;
const f = (x: number) => x.toFixed(1).padStart(6);
const load = () => {
  try {
    return builtinModule<typeof import("node:os")>("node:os")?.loadavg()[0].toFixed(1) ?? "?";
  } catch {
    return "?";
  }
};
const loadBefore = load();

const wakeSpin = await measureWakeLatency(pool, { samples: 1000 });
const wakeSleep = await measureWakeLatency(pool, { samples: 200, spinMicros: 0 });
const one = await measureEmptyTask(pool, { threads: 1, runs: 20000 });
const twoSpin = await measureEmptyTask(pool, { threads: 2, runs: 20000 });
const twoNoSpin = await measureEmptyTask(pool, { threads: 2, runs: 20000, spinMicros: 0 });
const twoPaused = await measureEmptyTask(pool, { threads: 2, runs: 200, pauseMs: 1 });
console.log(
  `${rtName}, ${pool.kind}, pool ready in ${startMs.toFixed(0)} ms (1 worker), load ${loadBefore}..${load()}`,
);
console.log(
  `  wake-up, worker spinning (${spin} us): p10 ${f(wakeSpin.p10)}  median ${f(wakeSpin.median)}  p90 ${f(wakeSpin.p90)} us`,
);
console.log(
  `  wake-up, worker asleep             : p10 ${f(wakeSleep.p10)}  median ${f(wakeSleep.median)}  p90 ${f(wakeSleep.p90)} us`,
);
console.log(`  empty task, 1 thread                       : ${f(one)} us (mean)`);
console.log(`  empty task, 2 threads, back to back        : ${f(twoSpin)} us (mean)`);
console.log(`  empty task, 2 threads, back to back, no spin: ${f(twoNoSpin)} us (mean)`);
console.log(`  empty task, 2 threads, after a 1 ms pause  : ${f(twoPaused)} us (median)`);
