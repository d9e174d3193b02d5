/**
 * The CPU backends under fire (issues 21 and 33): 25,000 seeded calls of every op with
 * random corruptions (garbage arguments, disposed, re-typed and re-shaped tensors, stride-0
 * and overlapping views, views made through the public constructor with random strides and
 * offsets, valid or not, NaN and ±Infinity written into inputs, huge stride/padding/dilation,
 * bad and falsy options) on the WASM and native kernels with the worker pool; half the calls
 * force one of the kernels explain() says accept them, the rest take the default.
 * Invariants: every call returns a result or throws a typed BackplaneError (never a
 * TypeError, RangeError or WASM trap); a sentinel tensor in the shared WASM memory is never
 * written; a result with elementwise semantics matches the reference kernel, NaN for NaN.
 * The seed is printed on failure; BACKPLANE_FUZZ_SEED replays one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { env } from "node:process";
import {
  BackplaneError,
  backends,
  explain,
  randn,
  ready,
  seededRandom,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { dispatch, getOp } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import { CASES, makeRng } from "@backplane/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import "@backplane/backend-cpu-mkl";
import "@backplane/backend-nnpack";
import "../src/index.ts";

const CALLS = 25_000;
const SEED = Number(readEnv("BACKPLANE_FUZZ_SEED") ?? 20261124);
const HUGE = [2 ** 12, 2 ** 15, 2 ** 20, 2 ** 30, 2 ** 31, -1, 0, 1.5, Number.NaN];
const GARBAGE: unknown[] = [
  null,
  undefined,
  Number.NaN,
  -1,
  0,
  2 ** 40,
  "x",
  {},
  [],
  [[1], [2, 3]],
  true,
];
const FFT_OPS = new Set(["fft", "ifft", "rfft", "irfft"]);
const FALSY: unknown[] = [0, false, "", Number.NaN, null, undefined];
const NON_FINITE = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
const VIEW_STRIDES = [0, 1, 2, 3, 7, 1e6, -1, 1.5, Number.NaN];
const OPTION_KEYS = [
  "bias",
  "attnMask",
  "stride",
  "padding",
  "dilation",
  "groups",
  "dim",
  "n",
  "norm",
  "isCausal",
  "enableGqa",
  "scale",
  "dropoutP",
  "upper",
  "mode",
  "bogus",
];

/** A view whose elements overlap or repeat (stride 0), over the tensor's own storage. */
function oddView(t: Tensor, r: () => number): Tensor {
  if (t.rank < 2 || t.numel === 0) return t;
  const shape = [...t.shape];
  const strides = r() < 0.5 ? [0, ...t.strides.slice(1)] : [1, ...t.strides.slice(1).map(() => 1)];
  return new Tensor(t.storage, t.dtype, shape, strides.slice(0, shape.length), t.offset);
}

function corrupt(args: unknown[], r: () => number): unknown[] {
  const out = [...args];
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const i = Math.floor(r() * Math.max(1, out.length));
  const target = out[i];
  switch (Math.floor(r() * 10)) {
    case 0:
      out[i] = pick(GARBAGE);
      break;
    case 1:
      if (target instanceof Tensor) target.dispose();
      break;
    case 2:
      if (target instanceof Tensor && !target.disposed)
        out[i] = target.astype(pick(["int32", "float64", "float16", "bool"] as const));
      break;
    case 3:
      if (target instanceof Tensor && !target.disposed) out[i] = oddView(target, r);
      break;
    case 4:
      if (target instanceof Tensor && !target.disposed) {
        const shape = Array.from({ length: 1 + Math.floor(r() * 4) }, () => Math.floor(r() * 6));
        out[i] = randn(shape, {
          seed: Math.floor(r() * 1e6),
          dtype: target.dtype === "bool" ? "float32" : target.dtype,
        });
      }
      break;
    case 5: {
      const last = out.at(-1);
      const opts =
        last && typeof last === "object" && !(last instanceof Tensor) && !Array.isArray(last)
          ? { ...last }
          : {};
      const key = pick(OPTION_KEYS);
      (opts as Record<string, unknown>)[key] = r() < 0.6 ? pick(HUGE) : pick(GARBAGE);
      if (opts === last) out[out.length - 1] = opts;
      else out.push(opts);
      break;
    }
    case 6:
      out.splice(i, 1);
      break;
    case 7:
      // A view through the public constructor: legal ones run, the rest are ShapeErrors.
      if (target instanceof Tensor && !target.disposed) {
        const shape = Array.from({ length: 1 + Math.floor(r() * 3) }, () => Math.floor(r() * 6));
        const strides = shape.map(() => pick(VIEW_STRIDES));
        const offset = pick([0, 1, 3, target.numel, -1, 0.5, 2 ** 28]);
        out[i] = new Tensor(target.storage, target.dtype, shape, strides, offset);
      }
      break;
    case 8:
      // NaN or ±Infinity into a float input (in place: the case made it for this call).
      if (target instanceof Tensor && !target.disposed && target.numel > 0) {
        if (target.dtype === "float32" || target.dtype === "float64") {
          const at = target.offset + Math.floor(r() * target.numel);
          target.storage.memory.hostView &&
            (target.hostData()[at - target.offset] = pick(NON_FINITE));
        }
      }
      break;
    default: {
      // A falsy value for an option: absent only when null or undefined.
      const last = out.at(-1);
      const opts =
        last && typeof last === "object" && !(last instanceof Tensor) && !Array.isArray(last)
          ? { ...last }
          : {};
      (opts as Record<string, unknown>)[pick(OPTION_KEYS)] = pick(FALSY);
      if (last === opts) out[out.length - 1] = opts;
      else out.push(opts);
    }
  }
  return out;
}

/** The arguments as a failure message shows them: each tensor's layout and odd values. */
function describeArgs(args: unknown[]): string {
  return args
    .map((x) => {
      if (!(x instanceof Tensor)) return JSON.stringify(x) ?? String(x);
      if (x.disposed) return "disposed";
      const v = x.storage.memory.hostView && x.numel < 1e5 ? x.toFloat64() : new Float64Array();
      const odd = v.filter((y) => !Number.isFinite(y)).length;
      return `${x.dtype}[${x.shape}] strides [${x.strides}] offset ${x.offset}${odd ? ` (${odd} non-finite)` : ""}`;
    })
    .join(", ");
}

const bytesOf = (t: Tensor) =>
  new Uint8Array(t.hostData().buffer, t.hostData().byteOffset, t.numel * 4).slice();

/** Whether an SDPA call hides keys from some rows (an attention mask or isCausal). */
function hidesKeys(op: string, args: unknown[]): boolean {
  if (op !== "scaledDotProductAttention") return false;
  const o = args[3] as { attnMask?: unknown; isCausal?: unknown } | undefined;
  return o?.attnMask != null || o?.isCausal === true;
}

/** Why a result disagrees with the reference kernel on the same arguments, or undefined. */
function compareWithReference(
  op: string,
  args: unknown[],
  result: Tensor,
  forced?: string,
): string | undefined {
  const rec = getOp(op)!;
  const kernel = forced ?? explain(op, ...args).selected;
  let ref: Tensor;
  try {
    // The reference backend's kernels of the op ("reference", SDPA's "math", MHA's paths).
    const names = rec.kernels.filter((k) => k.backend === "reference").map((k) => k.name);
    ref = withKernelPriority(op, names, () => dispatch(rec, rec.prepare(...args))) as Tensor;
  } catch (e) {
    return `${kernel} returned a result but the reference refused: ${(e as Error).message}`;
  }
  const a = result.toFloat64();
  const b = ref.toFloat64();
  if (a.length !== b.length) return `${kernel}: ${a.length} elements, the reference ${b.length}`;
  let scale = 1;
  let err = 0;
  for (let j = 0; j < b.length; j++) {
    const x = a[j];
    const y = b[j];
    // Non-finite where the reference is non-finite, finite values within the tolerance.
    // NaN and ±Infinity are one class here: a butterfly's inf - inf is NaN where a direct
    // sum keeps the infinity, and both are right. Transforms are held to less: a signal
    // with a non-finite sample is non-finite wherever the algorithm mixes it, and the
    // structural zeros of a real FFT (the DC bin's imaginary part) stay 0 in the fast
    // kernels while the reference's chirp-z spreads NaN there (docs/torch-mapping.md).
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (FFT_OPS.has(op)) continue;
      // A NaN in the value of a masked or hidden key: NaN where a kernel multiplies its
      // weight of 0 by it (the reference), ignored where a kernel skips the key's tile
      // (packages/core/README.md); both are allowed, so with keys hidden (a mask or
      // isCausal) finite against NaN passes here.
      if (Number.isNaN(y) && hidesKeys(op, args)) continue;
      if (Number.isFinite(x) || Number.isFinite(y))
        return `${kernel}: element ${j} is ${x}, the reference's ${y}`;
      continue;
    }
    scale = Math.max(scale, Math.abs(y));
    err = Math.max(err, Math.abs(x - y));
  }
  return err / scale < 1e-3 ? undefined : `${kernel}: error ${err / scale} against the reference`;
}

describe("fuzz: the CPU backends with the pool", () => {
  // A cache directory of its own: nothing another run or test file wrote steers the kernels.
  const cache = mkdtempSync(join(tmpdir(), "bp-fuzz-cache-"));
  const savedCache = env.BACKPLANE_CACHE_DIR;
  beforeAll(() => {
    env.BACKPLANE_CACHE_DIR = cache;
  });
  afterAll(() => {
    if (savedCache === undefined) delete env.BACKPLANE_CACHE_DIR;
    else env.BACKPLANE_CACHE_DIR = savedCache;
    rmSync(cache, { recursive: true, force: true });
  });

  it(`${CALLS} corrupted calls: typed errors only, no trap, no stray write, right results`, async () => {
    // The authors' kernel order, not one measured (calibration, per-shape ranking): the
    // unforced calls then pick the same kernels on every run, so a failing seed replays.
    using _ = backends.cpu.flags({ calibrate: false });
    await ready();
    expect(backends.cpu.calibration()?.source).toBe("off");
    const r = seededRandom(SEED);
    const sentinel = randn([4096], { seed: 99 });
    const sentinelBytes = bytesOf(sentinel);
    const ops = Object.keys(CASES);
    const untyped: string[] = [];
    const wrong: string[] = [];
    let typed = 0;
    let ok = 0;
    let slowest = 0;
    let slowestCall = "";
    for (let call = 0; call < CALLS; call++) {
      const op = ops[Math.floor(r() * ops.length)];
      const list = CASES[op];
      const c = list[Math.floor(r() * list.length)];
      const rec = getOp(op)!;
      const t0 = performance.now();
      let args: unknown[] = [];
      let forced: string | undefined;
      let result: unknown;
      try {
        args = corrupt(c.make("float32", makeRng(Math.floor(r() * 1e9))), r);
        if (r() < 0.5) {
          const accepting = explain(op, ...args)
            .candidates.filter((k) => k.accepted)
            .map((k) => k.kernel);
          forced = accepting[Math.floor(r() * accepting.length)];
        }
        const run = () => dispatch(rec, rec.prepare(...args));
        result = forced ? withKernelPriority(op, [forced], run) : run();
        ok++;
      } catch (e) {
        if (e instanceof BackplaneError) typed++;
        else
          untyped.push(
            `call ${call}: ${op} ${c.name}${forced ? ` [${forced}]` : ""}: ${(e as Error)?.name}: ${(e as Error)?.message}`,
          );
      }
      const comparable =
        c.check === undefined &&
        !c.sameRngOnly &&
        result instanceof Tensor &&
        result.numel > 0 &&
        result.numel < 50_000;
      if (comparable) {
        const problem = compareWithReference(op, args, result as Tensor, forced);
        if (problem)
          wrong.push(`call ${call}: ${op} ${c.name}: ${problem}; args ${describeArgs(args)}`);
      }
      const took = performance.now() - t0;
      if (took > slowest) {
        slowest = took;
        slowestCall = `call ${call}: ${op} ${c.name}${forced ? ` [${forced}]` : ""}; args ${describeArgs(args)}`;
      }
      if (call % 500 === 499 || untyped.length > 0) {
        const now = bytesOf(sentinel);
        if (now.some((v, j) => v !== sentinelBytes[j]))
          throw new Error(`seed ${SEED}: the sentinel changed by call ${call} (${op} ${c.name})`);
      }
      if (untyped.length > 0 || wrong.length > 0) break;
    }
    console.log(
      `[fuzz] seed ${SEED}: ${CALLS} calls over ${ops.length} ops: ${ok} results, ${typed} typed errors, slowest call ${slowest.toFixed(0)} ms`,
    );
    expect(untyped, `seed ${SEED}`).toEqual([]);
    expect(wrong, `seed ${SEED}`).toEqual([]);
    // Guards against a call that hangs (or nearly: huge strides or paddings looping), not
    // speed: far above any call here, even on a loaded machine.
    expect(slowest, `seed ${SEED}: ${slowestCall} took ${slowest} ms`).toBeLessThan(60_000);
    expect(typed + ok).toBe(CALLS);
  }, 600_000);
});
