/**
 * Bad input never crashes: thousands of random invalid calls (each a valid call with
 * random corruptions) must end in a typed BackplaneError, never a TypeError or a crash.
 */

import {
  allFlagKeys,
  BackplaneError,
  backends,
  getFlag,
  setFlag,
  Tensor,
  tensor,
} from "@backplane/core";
import { checkFlag, dispatch, getOp } from "@backplane/core/backend";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CASES, makeRng, registerHostBackedDevice } from "../src/index.ts";

registerHostBackedDevice("hostdev");
const ops = Object.keys(CASES);

const garbage = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.boolean(),
  fc.array(fc.integer(), { maxLength: 4 }),
  fc.dictionary(
    fc.string({ maxLength: 6 }),
    fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
    { maxKeys: 3 },
  ),
  fc.constant(Number.NaN),
  fc.constant(-1),
  fc.constant(Symbol("x")),
  fc.constant([[1, 2], [3]]),
);

const mutation = fc.record({
  kind: fc.constantFrom(
    "garbage",
    "dispose",
    "dtype",
    "reshape",
    "device",
    "option",
    "drop",
    "extra",
  ),
  at: fc.nat(),
  value: garbage,
  dtype: fc.constantFrom("int32", "bool", "int64", "float64", "float16"),
  shape: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 5 }),
  key: fc.constantFrom(
    "stride",
    "padding",
    "dim",
    "n",
    "norm",
    "attnMask",
    "dropoutP",
    "groups",
    "mode",
    "upper",
    "bogus",
  ),
});

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function corrupt(args: unknown[], muts: Mutation[]): unknown[] {
  const out = [...args];
  for (const m of muts) {
    const i = out.length === 0 ? 0 : m.at % out.length;
    const target = out[i];
    switch (m.kind) {
      case "garbage":
        out[i] = m.value;
        break;
      case "dispose":
        if (target instanceof Tensor) target.dispose();
        else out[i] = m.value;
        break;
      case "dtype":
        if (target instanceof Tensor && !target.disposed && target.deviceType === "cpu")
          out[i] = target.astype(m.dtype);
        break;
      case "reshape":
        if (target instanceof Tensor && !target.disposed) {
          const n = m.shape.reduce((a: number, b: number) => a * b, 1);
          out[i] = tensor(new Float32Array(n).fill(0.5), {
            shape: m.shape,
            dtype: target.dtype === "bool" ? "float32" : target.dtype,
          });
        }
        break;
      case "device":
        if (target instanceof Tensor && !target.disposed) out[i] = target.to("hostdev");
        break;
      case "option": {
        const last = out.length - 1;
        const opts =
          out[last] &&
          typeof out[last] === "object" &&
          !(out[last] instanceof Tensor) &&
          !Array.isArray(out[last])
            ? { ...(out[last] as object) }
            : {};
        (opts as Record<string, unknown>)[m.key] = m.value;
        out.push(opts);
        break;
      }
      case "drop":
        out.splice(i, 1);
        break;
      case "extra":
        out.push(m.value);
        break;
    }
  }
  return out;
}

describe("bad input never crashes", () => {
  it("random invalid op calls throw typed errors only", () => {
    let typed = 0;
    let untyped: string[] = [];
    fc.assert(
      fc.property(
        fc.constantFrom(...ops),
        fc.nat(),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        fc.integer(),
        (op, caseIndex, muts, seed) => {
          const list = CASES[op];
          const c = list[caseIndex % list.length];
          const args = corrupt(c.make("float32", makeRng(seed)), muts);
          const rec = getOp(op)!;
          try {
            dispatch(rec, rec.prepare(...args));
          } catch (e) {
            if (e instanceof BackplaneError) typed++;
            else
              untyped.push(
                `${op} ${c.name} ${JSON.stringify(muts.map((m) => m.kind))}: ${(e as Error)?.name}: ${(e as Error)?.message}`,
              );
          }
        },
      ),
      { numRuns: 2000, seed: 20261122 },
    );
    untyped = [...new Set(untyped)];
    expect(untyped.slice(0, 5)).toEqual([]);
    expect(typed).toBeGreaterThanOrEqual(1000);
  });

  it("random flag values are validated", () => {
    const keys = allFlagKeys();
    let rejected = 0;
    // A frame of its own, so the values that pass do not leak into other test files.
    backends.withFlags({}, () =>
      fc.assert(
        fc.property(fc.constantFrom(...keys), garbage, (key, value) => {
          try {
            setFlag(key, value);
          } catch (e) {
            expect(e).toBeInstanceOf(BackplaneError);
            rejected++;
          }
        }),
        { numRuns: 1000, seed: 7 },
      ),
    );
    expect(rejected).toBeGreaterThan(900);
  });

  it("random names and values written into every namespace: typed errors, nothing invalid stored", () => {
    const names = backends.names();
    const members = (ns: string) => Object.keys(backends.namespace(ns));
    // Real member names, their typos, torch's snake_case spellings and junk.
    const name = fc.oneof(
      fc.constantFrom(...names.flatMap(members)),
      fc.constantFrom(...names.flatMap(members)).map((m) => `${m.slice(0, -1)}x`),
      fc.constantFrom("benchmrk", "allow_tf32", "verbose", "enabled", "foo", "__proto__", ""),
      fc.string({ maxLength: 8 }),
    );
    const value = fc.oneof(garbage, fc.constantFrom(true, false, 0, 1, 10, "auto", "none"));
    const action = fc.constantFrom("set", "get", "flags", "withFlags", "nestedSet");
    let typed = 0;
    let ok = 0;
    const untyped: string[] = [];
    backends.withFlags({}, () =>
      fc.assert(
        fc.property(fc.constantFrom(...names), name, value, action, (ns, key, v, act) => {
          const target = backends.namespace(ns);
          try {
            if (act === "set") Reflect.set(target, key, v);
            else if (act === "get") Reflect.get(target, key);
            else if (act === "flags") target.flags({ [key]: v } as never)[Symbol.dispose]();
            else if (act === "withFlags") backends.withFlags({ [ns]: { [key]: v } }, () => 0);
            else if (act === "nestedSet") {
              // Into a sub-namespace (cuda.matmul, cudnn.rnn, cufftPlanCache) where there is one.
              const inner = Reflect.get(target, key);
              if (inner !== null && typeof inner === "object") Reflect.set(inner, key, v);
            }
            ok++;
          } catch (e) {
            if (e instanceof BackplaneError) typed++;
            else
              untyped.push(
                `${act} backends.${ns}.${key} = ${String(v)}: ${(e as Error)?.name}: ${(e as Error)?.message}`,
              );
          }
          // Whatever happened, every flag still holds a valid value and functions stay functions.
          for (const k of allFlagKeys()) checkFlag(k, getFlag(k));
          for (const fn of ["isAvailable", "status", "flags", "values"])
            if (typeof Reflect.get(backends.namespace(ns), fn) !== "function")
              throw new Error(`${ns}.${fn} was clobbered`);
        }),
        { numRuns: 5000, seed: 16 },
      ),
    );
    expect([...new Set(untyped)].slice(0, 5)).toEqual([]);
    expect(typed).toBeGreaterThan(2000);
    expect(ok).toBeGreaterThan(100);
  });
});
