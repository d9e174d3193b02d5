/**
 * What the path finders see of an einsum: each operand as a bitset over index labels,
 * the output's bitset, and a table that multiplies label sizes a byte of a bitset at a
 * time. Labels held by exactly the same operands (and the output or not) behave as one
 * label whose size is their product, so they are merged first: fewer bits, same costs.
 *
 * Cost model (opt_einsum's `flop_count`): a step over `terms` operands costs
 * size(all its labels) * (max(1, terms - 1) + (1 if a label is summed away else 0)).
 * For a pairwise step that is size(A ∪ B), doubled when an index disappears.
 */

/**
 * A path in SSA form: inputs are ids 0..n-1; step t creates id n + t from the ids it lists
 * (two for a pairwise step; one for a single-operand step; more for a final step that
 * contracts everything left when a memory limit allows nothing smaller).
 */
export type SsaPath = number[][];

export class Problem {
  /** Operands. */
  readonly n: number;
  /** 32-bit words per label set. */
  readonly W: number;
  /** Label set of operand i at words [i * W, (i + 1) * W). */
  readonly sets: Uint32Array;
  /** Labels of the output. */
  readonly out: Uint32Array;
  /** Products of label sizes per byte: tab[w * 1024 + b * 256 + v]. */
  readonly tab: Float64Array;
  /** Largest intermediate allowed, in elements (Infinity: no limit). */
  readonly limit: number;

  constructor(
    n: number,
    W: number,
    sets: Uint32Array,
    out: Uint32Array,
    tab: Float64Array,
    limit: number,
  ) {
    this.n = n;
    this.W = W;
    this.sets = sets;
    this.out = out;
    this.tab = tab;
    this.limit = limit;
  }

  /** Product of the sizes of the labels in buf[off .. off + W). */
  size(buf: Uint32Array, off: number): number {
    const t = this.tab;
    let p = 1;
    for (let w = 0; w < this.W; w++) {
      const x = buf[off + w];
      if (x === 0) continue;
      const b = w << 10;
      p *=
        t[b + (x & 255)] *
        t[b + 256 + ((x >>> 8) & 255)] *
        t[b + 512 + ((x >>> 16) & 255)] *
        t[b + 768 + (x >>> 24)];
    }
    return p;
  }

  /** The same labels and sizes over a subset of the operands (in the order given). */
  sub(operands: readonly number[]): Problem {
    const W = this.W;
    const sets = new Uint32Array(operands.length * W);
    operands.forEach((o, i) => {
      sets.set(this.sets.subarray(o * W, o * W + W), i * W);
    });
    return new Problem(operands.length, W, sets, this.out, this.tab, this.limit);
  }

  /** A problem whose operands are the given label sets (W words each), same labels. */
  withSets(sets: Uint32Array): Problem {
    return new Problem(sets.length / this.W, this.W, sets, this.out, this.tab, this.limit);
  }

  private alt?: Leaves;
  /**
   * Summing an input's own indices first (opt_einsum's single-term step "(i,)"): the
   * labels of each operand without those no other operand or the output holds, and what
   * that step costs (size * 2), or -1 where there is nothing to sum. Worth it when the
   * step that consumes the operand then touches fewer indices.
   */
  leaves(): Leaves {
    if (this.alt) return this.alt;
    const { n, W } = this;
    const ones = new Uint32Array(W);
    const twos = new Uint32Array(W);
    occurrenceMasks(
      this,
      this.sets,
      Array.from({ length: n }, (_, i) => i),
      n,
      ones,
      twos,
    );
    const sets = new Uint32Array(n * W);
    const cost = new Float64Array(n).fill(-1);
    let mask = 0;
    for (let i = 0; i < n; i++) {
      let own = false;
      for (let w = 0; w < W; w++) {
        const x = this.sets[i * W + w];
        sets[i * W + w] = x & ~ones[w];
        if ((x & ones[w]) !== 0) own = true;
      }
      if (own) {
        cost[i] = 2 * this.size(this.sets, i * W);
        if (i < 31) mask |= 1 << i;
      }
    }
    this.alt = { sets, cost, mask };
    return this.alt;
  }
}

export interface Leaves {
  /** Labels of operand i after summing its own indices. */
  sets: Uint32Array;
  /** Cost of that step, -1 where nothing is summed. */
  cost: Float64Array;
  /** Bit i set when operand i (< 31) has something to sum. */
  mask: number;
}

/**
 * Builds the problem from parsed labels (repeated labels within an operand count once).
 * `sizes` gives every label's size (the broadcast size where some operand has 1).
 */
export function buildProblem(
  inputs: readonly (readonly string[])[],
  output: readonly string[],
  sizes: Readonly<Record<string, number>>,
  limit = Number.POSITIVE_INFINITY,
): Problem {
  const n = inputs.length;
  const outSet = new Set(output);
  // Signature of a label: which operands hold it, and whether the output does.
  const holders = new Map<string, number[]>();
  inputs.forEach((labels, i) => {
    for (const l of new Set(labels)) {
      let h = holders.get(l);
      if (!h) holders.set(l, (h = []));
      h.push(i);
    }
  });
  const merged = new Map<string, { size: number; holders: number[]; out: boolean }>();
  for (const [l, h] of holders) {
    const key = `${outSet.has(l) ? "o" : "-"}${h.join(",")}`;
    const m = merged.get(key);
    const s = sizes[l] ?? 1;
    if (m) m.size *= s;
    else merged.set(key, { size: s, holders: h, out: outSet.has(l) });
  }
  const labels = [...merged.values()];
  const W = Math.max(1, Math.ceil(labels.length / 32));
  const sets = new Uint32Array(n * W);
  const out = new Uint32Array(W);
  const tab = new Float64Array(W * 1024);
  labels.forEach((m, bit) => {
    const w = bit >>> 5;
    const mask = (1 << (bit & 31)) >>> 0;
    for (const i of m.holders) sets[i * W + w] |= mask;
    if (m.out) out[w] |= mask;
  });
  for (let w = 0; w < W; w++) {
    for (let b = 0; b < 4; b++) {
      const base = (w << 10) + b * 256;
      tab[base] = 1;
      for (let v = 1; v < 256; v++) {
        const low = v & -v;
        const bit = w * 32 + b * 8 + 31 - Math.clz32(low);
        tab[base + v] = tab[base + (v ^ low)] * (bit < labels.length ? labels[bit].size : 1);
      }
    }
  }
  return new Problem(n, W, sets, out, tab, limit);
}

/**
 * Occurrence masks of a set of operands: `ones` holds the labels exactly one of them has,
 * `twos` those exactly two have; output labels are in neither (they are never summed).
 * With them a pairwise step A, B sums away ((A | B) & ones) | (A & B & twos).
 */
export function occurrenceMasks(
  p: Problem,
  sets: Uint32Array,
  ids: ArrayLike<number>,
  count: number,
  ones: Uint32Array,
  twos: Uint32Array,
): void {
  const W = p.W;
  for (let w = 0; w < W; w++) {
    let o = 0;
    let t = 0;
    let more = p.out[w];
    for (let i = 0; i < count; i++) {
      const x = sets[ids[i] * W + w];
      const zero = ~(o | t | more);
      more |= t & x;
      t = (t & ~x) | (o & x);
      o = (o & ~x) | (x & zero);
    }
    ones[w] = o & ~more;
    twos[w] = t & ~more;
  }
}

/** Cost of a step over `terms` operands whose labels are `all` (opt_einsum's flop_count). */
export function flopCount(size: number, inner: boolean, terms: number): number {
  return size * (Math.max(1, terms - 1) + (inner ? 1 : 0));
}

/** Cost of an SSA path on p (the model above), and its largest intermediate. */
export function ssaCost(p: Problem, path: SsaPath): { cost: number; largest: number } {
  const W = p.W;
  const total = p.n + path.length;
  const sets = new Uint32Array(total * W);
  sets.set(p.sets);
  const alive = new Uint8Array(total);
  alive.fill(1, 0, p.n);
  const ids: number[] = [];
  const all = new Uint32Array(W);
  const keep = new Uint32Array(W);
  let cost = 0;
  let largest = 0;
  path.forEach((step, t) => {
    const id = p.n + t;
    // Labels still needed: the output and every operand outside the step.
    keep.set(p.out);
    all.fill(0);
    ids.length = 0;
    for (let i = 0; i < id; i++) if (alive[i]) ids.push(i);
    for (const i of ids) {
      const inStep = step.includes(i);
      for (let w = 0; w < W; w++) {
        if (inStep) all[w] |= sets[i * W + w];
        else keep[w] |= sets[i * W + w];
      }
    }
    let inner = false;
    for (let w = 0; w < W; w++) {
      const k = all[w] & keep[w];
      if (k !== all[w]) inner = true;
      sets[id * W + w] = k;
    }
    for (const i of step) alive[i] = 0;
    alive[id] = 1;
    cost += flopCount(p.size(all, 0), inner, step.length);
    largest = Math.max(largest, p.size(sets, id * W));
  });
  return { cost, largest };
}

/** SSA ids -> opt_einsum's linear form (positions in the current operand list, results appended). */
export function ssaToLinear(n: number, path: SsaPath): number[][] {
  const ids: number[] = Array.from({ length: n }, (_, i) => i);
  let next = n;
  return path.map((step) => {
    const pos = step.map((id) => ids.indexOf(id)).sort((a, b) => a - b);
    for (let j = pos.length - 1; j >= 0; j--) ids.splice(pos[j], 1);
    ids.push(next++);
    return pos;
  });
}

/**
 * For a path (pairwise steps, maybe single-term ones already), decides for every input
 * consumed by a pairwise step whether summing its own indices first is cheaper: each
 * input is used once, so the choice is per step (two inputs: four cases) and exact for
 * the given tree. Returns the path with the "(i,)" steps inserted, and its cost.
 */
export function reduceLeaves(p: Problem, path: SsaPath): { ssa: SsaPath; cost: number } {
  const { n, W } = p;
  const leaves = p.leaves();
  const base = ssaCost(p, path);
  if (leaves.cost.every((c) => c < 0)) return { ssa: path, cost: base.cost };
  // Labels of every id, and of each step's result, by replaying the path.
  const total = n + path.length;
  const sets = new Uint32Array(total * W);
  sets.set(p.sets);
  const alive = new Uint8Array(total);
  alive.fill(1, 0, n);
  const used = new Uint8Array(n);
  for (const step of path) if (step.length === 1 && step[0] < n) used[step[0]] = 1;
  const keep = new Uint32Array(W);
  const x = new Uint32Array(W);
  const out: SsaPath = [];
  const map = Array.from({ length: total }, (_, i) => i);
  let next = n;
  let cost = 0;
  path.forEach((step, t) => {
    const id = n + t;
    keep.set(p.out);
    for (let i = 0; i < id; i++)
      if (alive[i] && !step.includes(i)) for (let w = 0; w < W; w++) keep[w] |= sets[i * W + w];
    const all = new Uint32Array(W);
    for (const i of step) for (let w = 0; w < W; w++) all[w] |= sets[i * W + w];
    let inner = false;
    for (let w = 0; w < W; w++) {
      sets[id * W + w] = all[w] & keep[w];
      if (sets[id * W + w] !== all[w]) inner = true;
    }
    let choice = 0;
    let best = p.size(all, 0) * (Math.max(1, step.length - 1) + (inner ? 1 : 0));
    if (step.length === 2) {
      const [a, b] = step;
      const can = (i: number) => i < n && !used[i] && leaves.cost[i] >= 0;
      for (let c = 1; c < 4; c++) {
        if ((c & 1 && !can(a)) || (c & 2 && !can(b))) continue;
        let extra = 0;
        for (let w = 0; w < W; w++) {
          const xa = c & 1 ? leaves.sets[a * W + w] : sets[a * W + w];
          const xb = c & 2 ? leaves.sets[b * W + w] : sets[b * W + w];
          x[w] = xa | xb;
        }
        if (c & 1) extra += leaves.cost[a];
        if (c & 2) extra += leaves.cost[b];
        let inn = false;
        for (let w = 0; w < W; w++) if (x[w] !== sets[id * W + w]) inn = true;
        const v = extra + p.size(x, 0) * (inn ? 2 : 1);
        if (v < best) {
          best = v;
          choice = c;
        }
      }
    }
    const ids = step.map((i, k) => {
      if (choice & (1 << k)) {
        out.push([map[i]]);
        return next++;
      }
      return map[i];
    });
    out.push(ids);
    map[id] = next++;
    for (const i of step) alive[i] = 0;
    alive[id] = 1;
    cost += best;
  });
  return cost < base.cost ? { ssa: out, cost } : { ssa: path, cost: base.cost };
}
