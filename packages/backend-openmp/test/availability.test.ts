import { backends } from "@backplane/core";
import type { ParallelService } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import {
  type AvailabilityProbe,
  openmpAvailability,
  openmpPool,
  probeEnvironment,
  waitPolicy,
} from "../src/index.ts";

const server: AvailabilityProbe = {
  runtime: "node",
  sharedArrayBuffer: true,
  crossOriginIsolated: true,
  atomics: true,
  workerThreads: true,
  webWorkers: false,
  memory: "shared",
};

describe("backends.openmp.pool()", () => {
  it("is the installed pool, typed as the core's ParallelService (README's table)", async () => {
    // tsc checks this file (npx tsc -p tsconfig.json): before the core typed it on
    // backends.openmp, pool() was error TS2339 here.
    await backends.ready("openmp");
    const pool: ParallelService | undefined = backends.openmp.pool();
    expect(pool).toBe(openmpPool());
    expect(pool!.threads()).toBeGreaterThanOrEqual(1);
  });
});

describe("isAvailable", () => {
  it("is true here, with a shared CPU memory", () => {
    const probe = probeEnvironment();
    expect(probe.memory).toBe("shared");
    expect(probe.workerThreads || probe.webWorkers).toBe(true);
    expect(openmpAvailability()).toEqual({ available: true });
    expect(backends.openmp.isAvailable()).toBe(true);
    expect(backends.xeon.isAvailable()).toBe(true);
    expect(backends.openmp.status().backend).toBe("openmp");
  });

  it("names the two headers a page that is not cross-origin isolated needs", () => {
    const page = {
      ...server,
      runtime: "browser",
      crossOriginIsolated: false,
      workerThreads: false,
      webWorkers: true,
    } as const;
    for (const probe of [page, { ...page, sharedArrayBuffer: false }]) {
      const a = openmpAvailability(probe);
      expect(a.available).toBe(false);
      expect(a.reason).toMatch(/not cross-origin isolated/);
      expect(a.reason).toContain("Cross-Origin-Opener-Policy: same-origin");
      expect(a.reason).toContain("Cross-Origin-Embedder-Policy: require-corp");
    }
    // An isolated page is fine.
    expect(openmpAvailability({ ...page, crossOriginIsolated: true }).available).toBe(true);
  });

  it("says what else is missing", () => {
    const reason = (p: Partial<AvailabilityProbe>) =>
      openmpAvailability({ ...server, ...p }).reason;
    expect(reason({ sharedArrayBuffer: false })).toMatch(/no SharedArrayBuffer/);
    expect(reason({ atomics: false })).toMatch(/no Atomics\.wait/);
    expect(reason({ workerThreads: false, webWorkers: false })).toMatch(
      /no workers \(neither node:worker_threads nor Web Workers\)/,
    );
    expect(reason({ memory: "plain" })).toMatch(/CPU memory .* is not shared/);
    expect(reason({ memory: { error: "cpu: WebAssembly is not available" } })).toMatch(
      /there is no CPU memory: cpu: WebAssembly is not available/,
    );
    expect(
      openmpAvailability({ ...server, webWorkers: true, workerThreads: false }).available,
    ).toBe(true);
  });

  it("reads OMP_WAIT_POLICY", () => {
    expect(waitPolicy("PASSIVE")).toEqual({ spinMicros: 0, callerSpinMicros: 0 });
    expect(waitPolicy("active").spinMicros).toBe(1000);
    expect(waitPolicy(undefined)).toEqual({});
  });
});
