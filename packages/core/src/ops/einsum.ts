/**
 * einsum: explicit ("ij,jk->ik") and implicit ("ij,jk") outputs, "..." broadcasting,
 * repeated indices (traces, diagonals), any number of operands. Parsing here gives
 * every kernel the same checked description; errors point at the character.
 */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { checkFloat, checkSame, checkTensor } from "./validate.ts";

export interface EinsumParams extends OpParams {
  equation: string;
  operands: Tensor[];
  /** Index labels of each operand, one per dimension ("..." expanded to labels like "\ue000"). */
  inputs: string[][];
  /** Labels of the output, in order. */
  output: string[];
  /** Size of every label (1 where it only broadcasts). */
  sizes: Record<string, number>;
}

const LETTER = /^[a-zA-Z]$/;

/**
 * The label of the i-th dimension "..." covers: a private-use character, never a letter.
 * (Control characters \u0001.. once served, and from 32 dimensions on reached " ", "!"...,
 * which the implicit output counted as named indices: wrong shapes past 31 dimensions.)
 */
const ellipsisLabel = (i: number): string => String.fromCharCode(0xe000 + i);
const isEllipsisLabel = (l: string): boolean => !LETTER.test(l);

function fail(eq: string, at: number, msg: string): never {
  throw new ArgumentError(`einsum: ${msg}\n  ${eq}\n  ${" ".repeat(Math.max(0, at))}^`);
}

/** Splits one term ("ab...c") into labels; "..." becomes the token "...". Returns labels and char positions. */
function terms(eq: string, start: number, text: string): { labels: string[]; at: number[] } {
  const labels: string[] = [];
  const at: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === " ") continue;
    if (ch === ".") {
      if (text.slice(i, i + 3) !== "...") fail(eq, start + i, 'a "." must be part of "..."');
      if (labels.includes("...")) fail(eq, start + i, '"..." may appear once per operand');
      labels.push("...");
      at.push(start + i);
      i += 2;
      continue;
    }
    if (!LETTER.test(ch)) fail(eq, start + i, `index ${show(ch)} is not a letter`);
    labels.push(ch);
    at.push(start + i);
  }
  return { labels, at };
}

// Long: the einsum equation grammar (terms, ellipsis, output) in one pass over the string.
export function parseEinsum(
  equation: string,
  shapes: readonly (readonly number[])[],
): Omit<EinsumParams, "operands" | "deviceType" | "dtype"> {
  if (typeof equation !== "string")
    throw new ArgumentError(`einsum: equation must be a string, got ${typeof equation}`);
  const arrow = equation.indexOf("->");
  const lhs = arrow < 0 ? equation : equation.slice(0, arrow);
  const parts = lhs.split(",");
  if (parts.length !== shapes.length) {
    fail(
      equation,
      lhs.length,
      `the equation has ${parts.length} operand term(s) but ${shapes.length} tensor(s) were given`,
    );
  }
  const inputs: string[][] = [];
  const sizes: Record<string, number> = {};
  const where: Record<string, string> = {};
  let ellipsisRank = 0;
  let offset = 0;
  const parsed = parts.map((p) => {
    const t = { ...terms(equation, offset, p), start: offset };
    offset += p.length + 1;
    return t;
  });
  parsed.forEach((t, oi) => {
    const rank = shapes[oi].length;
    const named = t.labels.filter((l) => l !== "...").length;
    const hasEllipsis = t.labels.includes("...");
    if (hasEllipsis ? named > rank : named !== rank) {
      fail(
        equation,
        t.at[0] ?? t.start, // an empty term: point where it would be
        `operand ${oi} has ${rank} dimension(s) [${shapes[oi]}] but its term names ${named}`,
      );
    }
    if (hasEllipsis) ellipsisRank = Math.max(ellipsisRank, rank - named);
  });
  const ell = Array.from({ length: ellipsisRank }, (_, i) => ellipsisLabel(i));
  parsed.forEach((t, oi) => {
    const shape = shapes[oi];
    const rank = shape.length;
    const named = t.labels.filter((l) => l !== "...").length;
    const labels: string[] = [];
    for (const l of t.labels) {
      if (l === "...") labels.push(...ell.slice(ellipsisRank - (rank - named)));
      else labels.push(l);
    }
    labels.forEach((l, d) => {
      const size = shape[d];
      const prev = sizes[l];
      if (prev === undefined || prev === 1) {
        sizes[l] = size;
        where[l] = `operand ${oi} dim ${d}`;
      } else if (size !== prev && size !== 1) {
        const isEll = isEllipsisLabel(l);
        const pos = t.at[t.labels.indexOf(isEll ? "..." : l)];
        fail(
          equation,
          pos,
          `index ${isEll ? "..." : l} has size ${size} in operand ${oi} (dim ${d}) but ${prev} in ${where[l]}`,
        );
      }
      // Repeated labels within one operand (a diagonal) must agree exactly.
      if (labels.indexOf(l) !== d && shape[labels.indexOf(l)] !== size) {
        fail(
          equation,
          t.at[d] ?? 0,
          `repeated index ${l} in operand ${oi} has sizes ${shape[labels.indexOf(l)]} and ${size}`,
        );
      }
    });
    inputs.push(labels);
  });
  let output: string[];
  if (arrow >= 0) {
    const rhs = terms(equation, arrow + 2, equation.slice(arrow + 2));
    output = [];
    rhs.labels.forEach((l, i) => {
      if (l === "...") output.push(...ell);
      else {
        if (output.includes(l)) fail(equation, rhs.at[i], `output index ${l} appears twice`);
        if (sizes[l] === undefined)
          fail(equation, rhs.at[i], `output index ${l} does not appear in any operand`);
        output.push(l);
      }
    });
  } else {
    // Implicit output: "..." first, then indices that appear exactly once, alphabetically.
    const count: Record<string, number> = {};
    for (const labels of inputs)
      for (const l of labels) if (!isEllipsisLabel(l)) count[l] = (count[l] ?? 0) + 1;
    output = [
      ...ell,
      ...Object.keys(count)
        .filter((l) => count[l] === 1)
        .sort(),
    ];
  }
  return { equation, inputs, output, sizes };
}

function prepare(equation: string, ...operands: Tensor[]): EinsumParams {
  if (operands.length === 0) throw new ArgumentError("einsum: at least one operand is required");
  for (let i = 0; i < operands.length; i++) checkTensor("einsum", `operand ${i}`, operands[i]);
  checkSame(
    "einsum",
    operands.map((_, i) => `operand ${i}`),
    operands,
  );
  checkFloat("einsum", "operand 0", operands[0]);
  const parsed = parseEinsum(
    equation,
    operands.map((t) => t.shape),
  );
  return { ...parsed, operands, deviceType: operands[0].deviceType, dtype: operands[0].dtype };
}

/** An operand's dims by distinct label (see labelledDims). */
export interface LabelledDims {
  labels: string[];
  shape: number[];
  strides: number[];
}

/**
 * An operand's dims as its distinct labels, for kernels that walk it by label: size-1 dims
 * dropped (summing or broadcasting one changes nothing) and a repeated label's strides
 * added (its diagonal).
 */
export function labelledDims(t: Tensor, labels: readonly string[]): LabelledDims {
  const out: LabelledDims = { labels: [], shape: [], strides: [] };
  labels.forEach((l, d) => {
    if (t.shape[d] === 1) return;
    const at = out.labels.indexOf(l);
    if (at >= 0) out.strides[at] += t.strides[d];
    else {
      out.labels.push(l);
      out.shape.push(t.shape[d]);
      out.strides.push(t.strides[d]);
    }
  });
  return out;
}

export const einsumOp: OpRecord<EinsumParams, [equation: string, ...operands: Tensor[]], Tensor> =
  defineOp({
    name: "einsum",
    prepare,
    shapeKey: (p: EinsumParams) =>
      `${p.equation}:${p.operands.map((t) => t.shape.join("x")).join(",")}`,
  });

/** Einstein summation over the operands (torch.einsum). */
export function einsum(equation: string, ...operands: Tensor[]): Tensor {
  return dispatch(einsumOp, prepare(equation, ...operands));
}
