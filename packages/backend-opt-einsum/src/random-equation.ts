/**
 * Random tensor networks for tests and benchmarks (like opt_einsum's rand_equation):
 * `n` operands, about `reg` indices each; every bond index joins two different operands,
 * `nOut` indices appear once and in the output. Seeded, so a network can be replayed.
 */
import { ArgumentError } from "@backplane/core";
import type {
  OptEinsumRandomEquation,
  OptEinsumRandomEquationOptions,
} from "@backplane/core/backend";
import { prng, show } from "./paths.ts";

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** nOut, dMin, dMax, seed, globalDim (the core's contract for getOptEinsum()'s API). */
export type RandomEquationOptions = OptEinsumRandomEquationOptions;
export type RandomEquation = OptEinsumRandomEquation;

/**
 * The invariant needs n >= 2 (a bond joins two different operands) and whole counts;
 * a fraction or a negative would index past LETTERS ("undefined" in the equation).
 */
function checkArgs(n: unknown, reg: unknown, opts: unknown): void {
  const fail = (what: string, want: string, v: unknown) =>
    new ArgumentError(`randomEquation: ${what} must be ${want}, got ${show(v)}`);
  if (!Number.isSafeInteger(n) || (n as number) < 2) throw fail("n", "an integer >= 2", n);
  // reg may be fractional (an average degree): n * reg / 2 bonds, rounded down.
  if (typeof reg !== "number" || !Number.isFinite(reg) || reg <= 0)
    throw fail("reg", "a finite number > 0", reg);
  if (opts === null || typeof opts !== "object" || Array.isArray(opts))
    throw fail("options", "an object", opts);
  const o = opts as Record<string, unknown>;
  const int = (k: string, min: number) => {
    const v = o[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < min))
      throw fail(`option ${k}`, `an integer >= ${min}`, v);
  };
  int("nOut", 0);
  int("dMin", 1);
  int("dMax", 1);
  if (o.seed !== undefined && !Number.isSafeInteger(o.seed))
    throw fail("option seed", "an integer", o.seed);
  if (o.globalDim !== undefined && typeof o.globalDim !== "boolean")
    throw fail("option globalDim", "a boolean", o.globalDim);
  const dMin = (o.dMin as number | undefined) ?? 2;
  const dMax = (o.dMax as number | undefined) ?? 9;
  if (dMax < dMin)
    throw new ArgumentError(`randomEquation: dMax (${dMax}) must be >= dMin (${dMin})`);
}

export function randomEquation(
  n: number,
  reg: number,
  opts: RandomEquationOptions = {},
): RandomEquation {
  checkArgs(n, reg, opts);
  const nOut = opts.nOut ?? 0;
  const dMin = opts.dMin ?? 2;
  const dMax = opts.dMax ?? 9;
  const rng = prng(opts.seed ?? 0);
  const bonds = Math.floor((n * reg) / 2);
  const count = bonds + nOut + (opts.globalDim ? 1 : 0);
  if (count > LETTERS.length) {
    throw new ArgumentError(
      `randomEquation: ${count} indices needed but einsum has ${LETTERS.length} letters; lower n, reg or nOut`,
    );
  }
  const sizes: Record<string, number> = {};
  const pool: string[] = [];
  const output: string[] = [];
  for (let i = 0; i < bonds + nOut; i++) {
    const l = LETTERS[i];
    sizes[l] = dMin + Math.floor(rng() * (dMax - dMin + 1));
    if (i < nOut) {
      output.push(l);
      pool.push(l);
    } else pool.push(l, l);
  }
  // Shuffle, give each operand one index, then place the rest (never twice on one operand).
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const terms: string[] = Array.from({ length: n }, () => "");
  pool.forEach((l, i) => {
    if (i < n) {
      terms[i] += l;
      return;
    }
    let where = Math.floor(rng() * n);
    for (let tries = 0; terms[where].includes(l) && tries < 4 * n; tries++)
      where = Math.floor(rng() * n);
    if (terms[where].includes(l)) where = terms.findIndex((t) => !t.includes(l));
    terms[where] += l;
  });
  if (opts.globalDim) {
    const g = LETTERS[bonds + nOut];
    sizes[g] = dMin + Math.floor(rng() * (dMax - dMin + 1));
    for (let i = 0; i < n; i++) terms[i] += g;
    output.push(g);
  }
  for (let i = output.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [output[i], output[j]] = [output[j], output[i]];
  }
  const equation = `${terms.join(",")}->${output.join("")}`;
  return { equation, shapes: terms.map((t) => [...t].map((l) => sizes[l])), sizes };
}
