/**
 * The qnnpack engine's rows on the pool: the same integers on 1 and 2 threads, with the
 * worker taking rows.
 */
import "@backplane/backend-nnpack";
import "../src/index.ts";
import {
  backends,
  kernelPriority,
  linearPrepack,
  quantizedLinear,
  quantizePerTensor,
  randn,
  ready,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { openmpPool } from "../src/index.ts";
import { withHelperWait } from "./helpers.ts";

describe("qnnpack-linear with the worker pool", () => {
  it("gives the same integers on 1 and 2 threads, a worker taking rows", async () => {
    await ready();
    const pool = openmpPool()!;
    const w = quantizePerTensor(randn([96, 200], { seed: 1 }), 0.01, 0, "qint8");
    const x = quantizePerTensor(randn([64, 200], { seed: 2 }), 0.02, 128, "quint8");
    const layer = linearPrepack(w);
    using _k = kernelPriority("quantizedLinear", ["qnnpack-linear"]);
    const run = () => Array.from(quantizedLinear(x, layer, 0.3, 128).intRepr().toFloat64());
    let one: number[];
    {
      using _ = backends.openmp.numThreadsScope(1);
      one = run();
    }
    using _t = backends.openmp.numThreadsScope(2);
    await pool.ready(2);
    // A worker surely takes rows.
    const before = pool.stats().workerChunks;
    expect(withHelperWait(pool, run)).toEqual(one);
    expect(pool.stats().workerChunks).toBeGreaterThan(before);
    layer.dispose();
  });
});
