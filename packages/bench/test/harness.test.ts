/**
 * Batch sizing: a sample is a batch of about `sampleMs` of calls, sized from the calls'
 * speed. A kernel's first calls can carry one-off work (its own measurements); sized from
 * such a call, a fast kernel's batches were single calls, each starting with the pool's
 * threads asleep after the pause between samples.
 */
import { describe, expect, it } from "vitest";
import { Harness } from "../src/harness.ts";

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
};

describe("Harness.compare batch sizing", () => {
  it("sizes from the fastest calls, not from a slow first one", async () => {
    let calls = 0;
    const impl = () => {
      calls++;
      busy(calls === 1 ? 30 : 0.05); // the first call measures, the rest take 50 us
    };
    const ms = await new Harness().compare(
      "slow first call",
      { impl },
      { samples: 5, sampleMs: 5 },
    );
    // 5 ms batches of 50 us calls: about 100 a batch, a warm and a timed one per sample.
    expect(calls).toBeGreaterThan(5 * 2 * 40);
    expect(ms.impl).toBeLessThan(0.5);
  });
});
