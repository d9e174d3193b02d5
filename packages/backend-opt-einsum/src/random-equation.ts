/**
 * Random tensor networks for tests and benchmarks (like opt_einsum's rand_equation):
 * `n` operands, about `reg` indices each; every bond index joins two different operands,
 * `nOut` indices appear once and in the output. Seeded, so a network can be replayed.
 */
import { ArgumentError } from "@backplane/core";
import { prng } from "./paths.ts";

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

export interface RandomEquationOptions {
  /** Indices that stay in the output (default 0: a scalar result). */
  nOut?: number;
  /** Index sizes are drawn uniformly from [dMin, dMax] (default 2..9). */
  dMin?: number;
  dMax?: number;
  seed?: number;
  /** Add one index held by every operand and the output (a batch dimension). */
  globalDim?: boolean;
}

export interface RandomEquation {
  equation: string;
  shapes: number[][];
  sizes: Record<string, number>;
}

export function randomEquation(
  n: number,
  reg: number,
  opts: RandomEquationOptions = {},
): RandomEquation {
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
