/**
 * The one ranker: dispatch() runs the kernel explain() names, on random inputs of every
 * ranked op, under every core.ranking policy, with user priority and deterministic mode.
 * Two fixture backends give each op kernels that refuse some shapes and "cost" a
 * shape-dependent time on a fake clock, so measured orders differ from shape to shape.
 */
import {
  backends,
  conv2d,
  explain,
  matmul,
  type RankPolicy,
  record,
  scaledDotProductAttention,
  softmax,
  type Tensor,
  tensor,
  withKernelPriority,
} from "@backplane/core";
import {
  defineBackend,
  defineOp,
  dispatch,
  getKernel,
  type OpParams,
  registerBackend,
  setTimingClock,
} from "@backplane/core/backend";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useMeasurements } from "../src/dispatch/measured.ts";
import { bumpGeneration } from "../src/registry/backends.ts";

const OPS = ["matmul", "conv2d", "scaledDotProductAttention", "softmax"] as const;
type OpName = (typeof OPS)[number];

let clockMs = 0;
let active = false;

/** A stable pseudo-random number in [0, 1) for a text. */
function unit(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0) / 2 ** 32;
}

/** The first dimension of the params' first tensor: what the fixtures' supports() look at. */
function firstDim(p: OpParams): number {
  for (const v of Object.values(p))
    if (v && typeof v === "object" && "shape" in v) return (v as Tensor).shape.at(-1) ?? 1;
  return 1;
}

function fixture(op: OpName, name: string, priority: number, refuse: number) {
  return {
    op,
    name,
    device: "cpu",
    dtypes: ["float32"] as const,
    deterministic: !name.endsWith("racy"),
    priority,
    supports: (p: OpParams) =>
      !active ? "inactive" : firstDim(p) % refuse === 0 ? `refuses a multiple of ${refuse}` : true,
    run: (p: OpParams) => {
      // The cost depends on the kernel and the input sizes, not on the machine's load.
      clockMs += 1 + 4 * unit(`${name} ${JSON.stringify(firstDim(p))}`);
      const reference = getKernel(op, op === "scaledDotProductAttention" ? "math" : "reference");
      return reference?.run(p as never);
    },
  };
}

for (const backend of ["rank-a", "rank-b"]) {
  const base = backend === "rank-a" ? 300 : 290;
  registerBackend(
    defineBackend({
      name: backend,
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      kernels: OPS.flatMap((op) => [
        fixture(op, `${backend}-${op}-1`, base + 5, backend === "rank-a" ? 2 : 3),
        fixture(op, `${backend}-${op}-2`, base, 5),
        fixture(op, `${backend}-${op}-racy`, base - 1, 7),
      ]),
    }),
  );
}

let seed = 7;
const rnd = (n: number) => {
  seed = (Math.imul(seed, 1664525) + 1013904223) | 0;
  return (seed >>> 0) % n;
};
const rand = (shape: number[]) => {
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = (rnd(2000) - 999.5) / 1000;
  return tensor(data, { shape });
};

/** Random arguments for an op, and the call. */
function randomCall(op: OpName): { args: Tensor[]; extra: unknown[]; run: () => Tensor } {
  const d = () => 1 + rnd(9);
  switch (op) {
    case "matmul": {
      const [a, b] = [rand([d(), 4]), rand([4, d()])];
      return { args: [a, b], extra: [], run: () => matmul(a, b) };
    }
    case "conv2d": {
      const c = d();
      const x = rand([1, c, 3 + rnd(5), 3 + rnd(5)]);
      const w = rand([d(), c, 1 + rnd(3), 1 + rnd(3)]);
      return { args: [x, w], extra: [], run: () => conv2d(x, w) };
    }
    case "scaledDotProductAttention": {
      const e = d();
      const [q, k, v] = [rand([1, 2, d(), e]), rand([1, 2, 5, e]), rand([1, 2, 5, d()])];
      return { args: [q, k, v], extra: [], run: () => scaledDotProductAttention(q, k, v) };
    }
    case "softmax": {
      const x = rand([d(), d()]);
      return { args: [x], extra: [-1], run: () => softmax(x, -1) };
    }
  }
}

/** Size-class figures for the ops with a work measure, each backend winning somewhere. */
function installSizeClasses(): void {
  const m = (op: string, work: number, msA: number, msB: number) => ({
    op,
    case: `w${work}`,
    dtype: "float32" as const,
    deviceType: "cpu",
    work,
    runs: 1,
    figures: [
      { kernel: `rank-a-${op}-1`, backend: "rank-a", ms: msA },
      { kernel: `rank-b-${op}-1`, backend: "rank-b", ms: msB },
    ],
  });
  useMeasurements(
    ["matmul", "conv2d", "scaledDotProductAttention"].flatMap((op) => [
      m(op, 50, 2, 1),
      m(op, 500, 1, 2),
      m(op, 5000, 3, 1),
    ]),
  );
  bumpGeneration();
}

describe("one ranker for dispatch and explain", () => {
  let restoreClock: () => number;
  beforeAll(() => {
    active = true;
    restoreClock = setTimingClock(() => clockMs);
    installSizeClasses();
  });
  afterAll(() => {
    active = false;
    setTimingClock(restoreClock);
    useMeasurements([]);
    bumpGeneration();
  });

  const modes: { policy: RankPolicy; extra: string }[] = [];
  for (const policy of ["off", "sizeClass", "perShape", "exhaustive"] as const)
    for (const extra of ["", "deterministic", "priority"]) modes.push({ policy, extra });

  for (const { policy, extra } of modes) {
    it(`${policy}${extra ? ` with ${extra}` : ""}: 100 random inputs per op agree`, () => {
      for (const op of OPS) {
        const priority = [`rank-b-${op}-2`, `rank-a-${op}-racy`];
        /** fn under the mode: the policy, deterministic mode or a user priority. */
        const inMode = <R>(fn: () => R): R =>
          backends.withFlags(
            {
              core: {
                ranking: policy,
                deterministic: extra === "deterministic",
                deterministicWarnOnly: true,
              },
            },
            () => (extra === "priority" ? withKernelPriority(op, priority, fn) : fn()),
          );
        let measuredSeen = 0;
        for (let i = 0; i < 100; i++) {
          const call = randomCall(op);
          const ran = inMode(() => record(call.run));
          const said = inMode(() => explain(op, ...call.args, ...call.extra));
          expect(ran.calls.map((c) => c.kernel)).toEqual([said.selected]);
          if (said.candidates.some((c) => c.measured)) measuredSeen++;
          expect(said.policy).toBe(extra === "" ? policy : "off");
          ran.result.dispose();
          for (const t of call.args) t.dispose();
        }
        // The measured policies did measure (softmax has no size classes).
        const measures =
          extra === "" && policy !== "off" && !(policy === "sizeClass" && op === "softmax");
        expect(measuredSeen > 0).toBe(measures);
      }
    });
  }
});

interface RecheckParams extends OpParams {
  x: Tensor;
}

/**
 * A per-shape-ranked op whose kernels add `cost()` to a fake clock (the timing clock while
 * `timed` runs) and log their names in `ran`, each in a backend of its own.
 */
function recheckFixture(
  opName: string,
  kernels: [backend: string, name: string, priority: number, cost: () => number][],
) {
  const op = defineOp({
    name: opName,
    prepare: (x: Tensor): RecheckParams => ({ x, deviceType: x.deviceType, dtype: x.dtype }),
    shapeKey: (p: RecheckParams) => p.x.shape.join("x"),
    rankPerShape: true,
  });
  let clock = 0;
  const ran: string[] = [];
  for (const [backend, name, priority, cost] of kernels)
    registerBackend(
      defineBackend({
        name: backend,
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [
          {
            op: opName,
            name,
            device: "cpu",
            dtypes: ["float32"] as const,
            deterministic: true,
            priority,
            run: (p: RecheckParams) => {
              clock += cost();
              ran.push(name);
              return p.x.numel;
            },
          },
        ],
      }),
    );
  const x = tensor(new Float32Array([1, 2, 3]));
  return {
    x,
    last: () => ran[ran.length - 1],
    call: () => dispatch(op, op.prepare(x)),
    /** The fake clock's time, and a pause with no calls. */
    clock: () => clock,
    wait: (ms: number) => {
      clock += ms;
    },
    /** Runs `body` under perShape ranking with the fake clock, then disposes x. */
    timed(body: () => void) {
      const restore = setTimingClock(() => clock);
      try {
        using _ = backends.core.flags({ ranking: "perShape" });
        body();
      } finally {
        setTimingClock(restore);
        x.dispose();
      }
    },
  };
}

describe("perShape measures a shape again once warm", () => {
  it("orders by the first measurement, then by the one at the shape's 8th call", () => {
    let coldRuns = 0;
    // "warming" is slow for its first 7 runs (the first measurement: a warm-up and three
    // rounds of two; code not yet compiled to its top tier), then the faster; "steady"
    // costs the same every time.
    const f = recheckFixture("rankerRecheck", [
      ["recheck-warming", "warming", 20, () => (coldRuns++ < 7 ? 5 : 1)],
      ["recheck-steady", "steady", 10, () => 2],
    ]);
    f.timed(() => {
      f.call(); // measured cold: "steady" first
      expect(f.last()).toBe("steady");
      for (let i = 2; i < 8; i++) {
        f.call();
        expect(f.last()).toBe("steady");
      }
      f.call(); // the 8th call measures again, warm: "warming" first
      expect(f.last()).toBe("warming");
      expect(explain("rankerRecheck", f.x).selected).toBe("warming");
      expect(explain("rankerRecheck", f.x).candidates.some((c) => c.measured)).toBe(true);
      // Another thread setting has orders of its own: none measured there yet.
      {
        using _t = backends.openmp.numThreadsScope(3);
        expect(explain("rankerRecheck", f.x).candidates.some((c) => c.measured)).toBe(false);
      }
    });
  });
});

describe("perShape keeps each kernel's best over its measurements", () => {
  it("a busy stretch during the 8th call's measurement does not unseat the faster kernel", () => {
    let busy = false;
    // "fast" takes 1 unless the machine is busy (5); "slow" always 2.
    const f = recheckFixture("rankerRecheckBest", [
      ["recheck-best-fast", "fast", 10, () => (busy ? 5 : 1)],
      ["recheck-best-slow", "slow", 20, () => 2],
    ]);
    f.timed(() => {
      for (let i = 1; i < 8; i++) f.call();
      expect(f.last()).toBe("fast");
      busy = true; // the 8th call measures again while the machine is busy
      f.call();
      busy = false;
      expect(f.last()).toBe("fast");
      for (let i = 9; i <= 70; i++) f.call(); // the 64th measures a third time
      expect(f.last()).toBe("fast");
      const m = explain("rankerRecheckBest", f.x).candidates.find((c) => c.kernel === "fast");
      expect((m?.measured as { ms: number } | undefined)?.ms).toBe(1); // its best, not the busy 5
    });
  });
});

describe("perShape's last recheck waits for the process to settle", () => {
  it("measures the 64th call's third time only a second after the first measurement", () => {
    // "settling" costs 5 for the first second of the clock (a second thread not yet up to
    // speed), then 1; "steady" always 2.
    const f = recheckFixture("rankerRecheckSettle", [
      ["recheck-settle-settling", "settling", 10, () => (f.clock() < 1000 ? 5 : 1)],
      ["recheck-settle-steady", "steady", 20, () => 2],
    ]);
    f.timed(() => {
      for (let i = 1; i <= 70; i++) f.call(); // the 8th and 64th calls come within the first second
      expect(f.clock()).toBeLessThan(1000);
      expect(f.last()).toBe("steady");
      f.wait(1000);
      f.call(); // the first call a second on measures the third time
      expect(f.last()).toBe("settling");
      const m = explain("rankerRecheckSettle", f.x).candidates.find((c) => c.kernel === "settling");
      expect((m?.measured as { ms: number } | undefined)?.ms).toBe(1);
    });
  });
});
