// Deno runs the same test files as vitest and bun: the `vitest` import maps here
// (deno.json). describe/it come from Deno's node:test, expect from jest's `expect`,
// wrapped so that vitest's `expect(value, message)` form works too.
import { expect as jestExpect } from "expect";

export {
  after as afterAll,
  afterEach,
  before as beforeAll,
  beforeEach,
  describe,
  it,
  it as test,
} from "node:test";

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
