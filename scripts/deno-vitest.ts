// Deno runs the same test files as vitest and bun: the `vitest` import maps here
// (deno.json). describe/it come from Deno's node:test, expect from jest's `expect`,
// wrapped so that vitest's `expect(value, message)` form works too.

import { describe as nodeDescribe, it as nodeIt } from "node:test";
import { expect as jestExpect } from "expect";

export { after as afterAll, afterEach, before as beforeAll, beforeEach } from "node:test";

/** vitest's printf-style case names: %s %d %i %f %j %o take the case's values in turn. */
function caseName(name: string, values: unknown[]): string {
  let k = 0;
  return name.replace(/%[sdifjo%]/g, (m) => {
    if (m === "%%") return "%";
    const v = values[k++];
    if (m === "%d" || m === "%i") return String(m === "%i" ? Math.trunc(Number(v)) : Number(v));
    if (m === "%f") return String(Number(v));
    if (m === "%j" || m === "%o") return JSON.stringify(v);
    return String(v);
  });
}

type Register = (name: string, fn: (...args: never[]) => unknown, ...rest: unknown[]) => unknown;

/**
 * node:test's it/describe with vitest's .each(cases)(name, fn): one test per case, an array
 * case spread into fn's arguments (tests written for vitest run here unchanged).
 */
function withEach(register: Register) {
  const each =
    (cases: readonly unknown[]) =>
    (name: string, fn: (...args: never[]) => unknown, ...rest: unknown[]) => {
      for (const c of cases) {
        const values = Array.isArray(c) ? c : [c];
        register(caseName(name, values), () => fn(...(values as never[])), ...rest);
      }
    };
  const call: Register = (name, fn, ...rest) => register(name, fn, ...rest);
  const skip = (register as Register & { skip: Register }).skip;
  // vitest's skipIf(condition) / runIf(condition): the skipping or the plain form.
  const skipIf = (condition: unknown) => (condition ? skip : call);
  const runIf = (condition: unknown) => (condition ? call : skip);
  return Object.assign(call, register, { each, skipIf, runIf });
}

export const it = withEach(nodeIt as unknown as Register);
export const test = it;
export const describe = withEach(nodeDescribe as unknown as Register);

function labelled<T extends object>(target: T, message: string): T {
  const relabel = (e: unknown) => {
    if (e instanceof Error) e.message = `${message}\n${e.message}`;
    return e;
  };
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop);
      if (typeof value === "function") {
        return (...args: unknown[]) => {
          try {
            const r = value.apply(t, args);
            return r instanceof Promise ? r.catch((e) => Promise.reject(relabel(e))) : r;
          } catch (e) {
            throw relabel(e);
          }
        };
      }
      return value !== null && typeof value === "object" ? labelled(value, message) : value;
    },
  });
}

export const expect = Object.assign(
  (actual: unknown, message?: string) =>
    message ? labelled(jestExpect(actual), message) : jestExpect(actual),
  jestExpect,
) as typeof jestExpect & ((actual: unknown, message?: string) => ReturnType<typeof jestExpect>);
