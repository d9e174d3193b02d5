/**
 * The expression set the tests and `npm run bench -- einsum` share: matrix chains, tensor
 * networks of 3 to 40 operands (MPS, lattices, rings, trees, stars, random networks),
 * ellipsis, traces and diagonals. Every shape is fixed (random ones are seeded).
 */

import { seededRandom } from "@backplane/core";
import { randomEquation } from "./random-equation.ts";

export interface Expr {
  name: string;
  equation: string;
  shapes: number[][];
}

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

function chain(name: string, dims: number[], tail = ""): Expr {
  const terms = dims.slice(0, -1).map((_, i) => LETTERS[i] + LETTERS[i + 1]);
  const out = `${LETTERS[0]}${LETTERS[dims.length - 1]}`;
  return {
    name,
    equation: `${terms.join(",")}${tail}->${out}`,
    shapes: dims.slice(0, -1).map((d, i) => [d, dims[i + 1]]),
  };
}

function randomDims(n: number, lo: number, hi: number, seed: number): number[] {
  const r = seededRandom(seed);
  return Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo + 1)));
}

/** <psi|psi> of an open MPS: ket A[i] (l, p, r), bra B[i] (l', p, r'). */
function mpsNorm(name: string, sites: number, bond: number, phys: number): Expr {
  const terms: string[] = [];
  const shapes: number[][] = [];
  let next = 0;
  const fresh = () => LETTERS[next++];
  const p = Array.from({ length: sites }, fresh);
  const k = Array.from({ length: sites - 1 }, fresh);
  const b = Array.from({ length: sites - 1 }, fresh);
  for (const [bonds] of [[k], [b]] as const) {
    for (let i = 0; i < sites; i++) {
      const t = (i > 0 ? bonds[i - 1] : "") + p[i] + (i < sites - 1 ? bonds[i] : "");
      terms.push(t);
      shapes.push([...t].map((l) => (p.includes(l) ? phys : bond)));
    }
  }
  return { name, equation: `${terms.join(",")}->`, shapes };
}

/** An r x c lattice of tensors with bond dimension d, every bond contracted. */
function lattice(name: string, rows: number, cols: number, d: number, open = false): Expr {
  const terms: string[][] = Array.from({ length: rows * cols }, () => []);
  let next = 0;
  const out: string[] = [];
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const here = i * cols + j;
      if (j + 1 < cols) {
        const l = LETTERS[next++];
        terms[here].push(l);
        terms[here + 1].push(l);
      }
      if (i + 1 < rows) {
        const l = LETTERS[next++];
        terms[here].push(l);
        terms[here + cols].push(l);
      }
    }
  }
  if (open)
    for (const t of terms) {
      const l = LETTERS[next++];
      t.push(l);
      out.push(l);
    }
  return {
    name,
    equation: `${terms.map((t) => t.join("")).join(",")}->${out.join("")}`,
    shapes: terms.map((t) => t.map((l) => (out.includes(l) ? 2 : d))),
  };
}

/** Trace of a product of n matrices. */
function ring(name: string, n: number, d: number): Expr {
  const terms = Array.from({ length: n }, (_, i) => LETTERS[i] + LETTERS[(i + 1) % n]);
  return { name, equation: `${terms.join(",")}->`, shapes: terms.map(() => [d, d]) };
}

/** A binary tree tensor network: leaves with a physical index, parents with three bonds. */
function tree(name: string, levels: number, d: number): Expr {
  const terms: string[] = [];
  let next = 0;
  const build = (depth: number): string => {
    const up = LETTERS[next++];
    if (depth === levels) {
      terms.push(up);
      return up;
    }
    const l = build(depth + 1);
    const r = build(depth + 1);
    terms.push(depth === 0 ? l + r : l + r + up);
    return up;
  };
  build(0);
  return {
    name,
    equation: `${terms.join(",")}->`,
    shapes: terms.map((t) => [...t].map(() => d)),
  };
}

function random(n: number, reg: number, seed: number, dMax = 6, nOut = 0): Expr {
  const e = randomEquation(n, reg, { seed, dMin: 2, dMax, nOut });
  return { name: `random-${n}`, equation: e.equation, shapes: e.shapes };
}

export const EXPRESSIONS: Expr[] = [
  // Matrix chains.
  chain("chain-clrs-6", [30, 35, 15, 5, 10, 20, 25]),
  chain("chain-10", randomDims(11, 2, 64, 10)),
  chain("chain-20", randomDims(21, 4, 40, 20)),
  {
    name: "chain-matvec",
    equation: "ij,jk,kl,lm,m->i",
    shapes: [[64, 64], [64, 64], [64, 64], [64, 64], [64]],
  },
  {
    name: "chain-batched",
    equation: "bij,bjk,bkl,blm->bim",
    shapes: [
      [8, 40, 4],
      [8, 4, 50],
      [8, 50, 3],
      [8, 3, 30],
    ],
  },
  // Tensor networks.
  {
    name: "oe-docs",
    equation: "ea,fb,abcd,gc,hd->efgh",
    shapes: [
      [10, 10],
      [10, 10],
      [10, 10, 10, 10],
      [10, 10],
      [10, 10],
    ],
  },
  {
    name: "tucker",
    equation: "abc,ia,jb,kc->ijk",
    shapes: [
      [4, 5, 6],
      [20, 4],
      [20, 5],
      [20, 6],
    ],
  },
  {
    name: "cp-3",
    equation: "ir,jr,kr->ijk",
    shapes: [
      [16, 8],
      [16, 8],
      [16, 8],
    ],
  },
  { name: "bilinear", equation: "i,ij,j->", shapes: [[200], [200, 200], [200]] },
  { name: "outer-3", equation: "i,j,k->ijk", shapes: [[12], [10], [8]] },
  {
    name: "hadamard",
    equation: "ij,ij,ij,jk->ik",
    shapes: [
      [30, 40],
      [30, 40],
      [30, 40],
      [40, 20],
    ],
  },
  {
    name: "attention",
    equation: "bhqd,bhkd,bhkv->bhqv",
    shapes: [
      [2, 4, 16, 8],
      [2, 4, 16, 8],
      [2, 4, 16, 8],
    ],
  },
  mpsNorm("mps-norm-6", 6, 8, 2),
  mpsNorm("mps-norm-10", 10, 6, 2),
  lattice("lattice-3x3-open", 3, 3, 3, true),
  lattice("lattice-4x4", 4, 4, 3),
  lattice("lattice-5x5", 5, 5, 2),
  ring("ring-10", 10, 12),
  ring("ring-30", 30, 6),
  tree("tree-15", 3, 4),
  {
    name: "star-8",
    equation: "abcdefgh,a,b,c,d,e,f,g,h->",
    shapes: [[4, 4, 4, 4, 4, 4, 4, 4], [4], [4], [4], [4], [4], [4], [4], [4]],
  },
  random(3, 3, 3, 8, 1),
  random(5, 3, 5, 8, 1),
  random(8, 3, 8),
  random(12, 3, 12),
  random(16, 3, 16),
  random(20, 3, 20),
  random(25, 3, 25, 5),
  random(30, 3, 30, 4),
  random(40, 2.5, 40, 3),
  // Ellipsis and broadcasting.
  {
    name: "ellipsis-chain",
    equation: "...ij,...jk,...kl->...il",
    shapes: [
      [4, 16, 16],
      [4, 16, 16],
      [4, 16, 16],
    ],
  },
  {
    name: "ellipsis-broadcast",
    equation: "...ij,...jk,k->...i",
    shapes: [[2, 1, 8, 8], [3, 8, 8], [8]],
  },
  {
    name: "size-1-broadcast",
    equation: "ij,jk,ik->ik",
    shapes: [
      [30, 1],
      [1, 20],
      [30, 20],
    ],
  },
  // Traces and diagonals.
  {
    name: "trace-product",
    equation: "ij,jk,ki->",
    shapes: [
      [40, 30],
      [30, 50],
      [50, 40],
    ],
  },
  {
    name: "traces-chain",
    equation: "iij,jk,kll->i",
    shapes: [
      [12, 12, 10],
      [10, 8],
      [8, 6, 6],
    ],
  },
  {
    name: "diagonal",
    equation: "ii,jj,ij->ij",
    shapes: [
      [20, 20],
      [15, 15],
      [20, 15],
    ],
  },
];
