/**
 * Plan choice under the cudnn flags, over the recording layer (no GPU): heuristics order,
 * deterministic and allowTf32 screening by cuDNN's numerical notes, benchmark timing bounded
 * by benchmarkLimit, refusals with their reasons, the plan cache, and no descriptor leaks.
 */
import { randn } from "@backplane/core";
import { ops } from "@backplane/core/backend";
import { afterAll, describe, expect, it } from "vitest";
import { CudnnError } from "../src/errors.ts";
import { buildConvGraph } from "../src/graph/conv.ts";
import { NUMERICAL_NOTE } from "../src/native/api.ts";
import type { ExecutionPlan } from "../src/plan/engines.ts";
import type { SelectionFlags } from "../src/plan/select.ts";
import { type FakeEngine, RecordingLayer } from "../src/recording.ts";
import { CudnnRuntime } from "../src/runtime.ts";
import { fakeContext } from "./helpers.ts";

const NONDET = NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
const TC = NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
const device = fakeContext();
afterAll(() => device.restore());
const base: SelectionFlags = {
  deterministic: false,
  allowTf32: true,
  benchmark: false,
  benchmarkLimit: 10,
};
const engines = (): FakeEngine[] => [
  { index: 7, numericalNotes: [NONDET], ms: 3, workspaceBytes: 1024 },
  { index: 3, numericalNotes: [TC], ms: 1, workspaceBytes: 0 },
  { index: 5, numericalNotes: [], ms: 2, workspaceBytes: 4096 },
];

function setup(list = engines(), dtype: "float32" | "float16" = "float32") {
  const layer = new RecordingLayer(list);
  const rt = new CudnnRuntime(layer);
  const p = ops.conv2d.prepare(randn([2, 8, 9, 9], { dtype }), randn([4, 8, 3, 3], { dtype }), {
    padding: 1,
  });
  const build = (b: Parameters<typeof buildConvGraph>[0]) =>
    buildConvGraph(b, p, "NCHW", { x: 16, w: 16 });
  // Timing runs the plan on the layer and reports the engine's simulated ms (not the wall
  // clock: a loaded 2-core machine can preempt a 1 ms busy loop and flip the ranking).
  const time = (plan: ExecutionPlan) => {
    rt.execute(device.ctx, 0, plan, new Map([[1, 0x100n]]));
    const ran = layer.executions.at(-1)!.engine;
    return list.find((e) => e.index === ran)!.ms!;
  };
  const plan = (flags: Partial<SelectionFlags>, key = JSON.stringify(flags)) =>
    rt.plan(key, build, dtype, { ...base, ...flags }, 1n, time);
  return { layer, rt, plan };
}

describe("plan choice follows the flags", () => {
  it("default: the heuristics' first engine", () => {
    const { plan } = setup();
    const p = plan({});
    expect(p.engine).toBe(7);
    expect(p.chosenBy).toBe("heuristics");
  });

  it("deterministic drops the engine cuDNN notes NONDETERMINISTIC", () => {
    const { plan } = setup();
    const p = plan({ deterministic: true });
    expect(p.engine).toBe(3);
    expect(p.excluded).toEqual([{ index: 7, reason: expect.stringMatching(/non-deterministic/) }]);
  });

  it("allowTf32 off drops TENSOR_CORE engines for float32, not for float16", () => {
    expect(setup().plan({ deterministic: true, allowTf32: false }).engine).toBe(5);
    expect(setup(engines(), "float16").plan({ deterministic: true, allowTf32: false }).engine).toBe(
      3,
    );
  });

  it("benchmark times the candidates and keeps the fastest; benchmarkLimit bounds how many", () => {
    const all = setup().plan({ benchmark: true, benchmarkLimit: 0 });
    expect(all.chosenBy).toBe("benchmark");
    expect(all.engine).toBe(3);
    expect(all.timings.map((t) => t.engine)).toEqual([7, 3, 5]);
    const two = setup().plan({ benchmark: true, benchmarkLimit: 2 });
    expect(two.timings.map((t) => t.engine)).toEqual([7, 3]);
    const one = setup().plan({ benchmark: true, benchmarkLimit: 1 });
    expect(one.chosenBy).toBe("heuristics");
    expect(one.engine).toBe(7);
  });

  it("an engine cuDNN refuses for the problem is skipped with its reason", () => {
    const list = engines();
    list[0]!.refuse = "CUDNN_STATUS_NOT_SUPPORTED_SHAPE for this tile";
    const p = setup(list).plan({});
    expect(p.engine).toBe(3);
    expect(p.excluded[0]!.reason).toMatch(
      /NOT_SUPPORTED.*: CUDNN_STATUS_NOT_SUPPORTED_SHAPE for this tile/,
    );
  });

  it("no engine left: a CudnnError naming each refusal", () => {
    const { plan } = setup(engines().map((e) => ({ ...e, numericalNotes: [NONDET] })));
    expect(() => plan({ deterministic: true })).toThrow(CudnnError);
    expect(() => plan({ deterministic: true }, "again")).toThrow(
      /none of the 3 engines.*engine 7: non-deterministic/,
    );
  });

  it("a refused problem is remembered: asking again builds no graph, clearing forgets it", () => {
    const { plan, rt, layer } = setup(engines().map((e) => ({ ...e, numericalNotes: [NONDET] })));
    let built = 0;
    const create = layer.symbols.cudnnBackendCreateDescriptor;
    (
      layer.symbols as { cudnnBackendCreateDescriptor: typeof create }
    ).cudnnBackendCreateDescriptor = (...a: Parameters<typeof create>) => {
      built++;
      return create(...a);
    };
    expect(() => plan({ deterministic: true }, "refused")).toThrow(CudnnError);
    const first = built;
    expect(first).toBeGreaterThan(0);
    expect(() => plan({ deterministic: true }, "refused")).toThrow(/none of the 3 engines/);
    expect(built).toBe(first);
    rt.plans.clear();
    expect(() => plan({ deterministic: true }, "refused")).toThrow(CudnnError);
    expect(built).toBeGreaterThan(first);
  });

  it("plans are cached by key; other flags build another plan", () => {
    const { plan, rt, layer } = setup();
    const a = plan({}, "k");
    const live = layer.liveDescriptors;
    expect(plan({}, "k")).toBe(a);
    expect(layer.liveDescriptors).toBe(live);
    expect(plan({ deterministic: true }, "k2").engine).toBe(3);
    expect(rt.plans.size).toBe(2);
  });

  it("only the cached plans stay alive: graphs, configs and engines are destroyed", () => {
    const { plan, rt, layer } = setup();
    plan({ benchmark: true, benchmarkLimit: 0 });
    // The chosen plan, and the variant pack of its last (timed) run, kept for reuse.
    expect(layer.liveDescriptors).toBe(2);
    rt.release();
    expect(layer.liveDescriptors).toBe(0);
  });
});

describe("execution", () => {
  it("binds every uid to its pointer, borrows the plan's workspace and gives it back", () => {
    const { plan, rt, layer } = setup();
    const p = plan({ deterministic: true, allowTf32: false });
    device.log.length = 0;
    rt.execute(
      device.ctx,
      0,
      p,
      new Map([
        [1, 0x10n],
        [2, 0x20n],
        [3, 0x30n],
      ]),
    );
    const e = layer.executions.at(-1)!;
    expect(e).toMatchObject({ engine: 5, uids: [1, 2, 3], pointers: [0x10n, 0x20n, 0x30n] });
    expect(e.workspace).not.toBe(0n);
    expect(device.log).toEqual(["activate 0", "allocate 0 4096", "free 4096"]);
  });

  it("a call with the same addresses reuses the plan's variant pack; new addresses replace it", () => {
    const { plan, layer, rt } = setup();
    const p = plan({ benchmark: true }); // engine 3: the fastest, and without a workspace
    expect(p.workspaceBytes).toBe(0);
    const run = (out: bigint) =>
      rt.execute(
        device.ctx,
        0,
        p,
        new Map([
          [1, 0x10n],
          [2, 0x20n],
          [3, out],
        ]),
      );
    const live = layer.liveDescriptors;
    run(0x30n);
    run(0x30n);
    const [first, second] = layer.executions.slice(-2);
    expect(second!.pack).toBe(first!.pack);
    run(0x40n);
    const third = layer.executions.at(-1)!;
    expect(third.pack).not.toBe(first!.pack);
    expect(third.pointers).toEqual([0x10n, 0x20n, 0x40n]);
    // Each replaced pack is destroyed: one kept per plan, never more.
    expect(layer.liveDescriptors).toBe(live);
    rt.release();
    expect(layer.liveDescriptors).toBe(0);
  });
});
