/**
 * Dynamic programming over subsets of operands. The key fact: the intermediate that a
 * subset S of the operands contracts to has labels union(S) ∩ (output ∪ union(not S)),
 * whatever the order inside S. So the cheapest way to build S is the cheapest split
 * S = S1 + S2 plus one pairwise step, and best(all operands) is the optimum over every
 * pairwise order.
 *
 * - `denseDP`: every split of every subset (3^n / 2 of them): exact, outer products
 *   included. Used up to ~16 operands.
 * - `sparseDP`: subsets built bottom-up by size, only those whose cost stays under a cap
 *   (any path's cost, e.g. greedy's, is a sound cap: every part of a better path costs
 *   less). With `outer: false` only splits whose halves share a non-output index are
 *   tried, found through per-operand lists; that is opt_einsum's `dp` (without
 *   outer products), run on each connected component. With `outer: true` every disjoint
 *   pair is tried: exact again, for more operands than the dense table holds.
 */
import type { Found } from "./greedy.ts";
import type { Leaves, Problem, SsaPath } from "./problem.ts";

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

/** Open-addressing map from positive int32 keys to slots (-1: absent). */
class IntMap {
  private keys = new Int32Array(4096);
  private vals = new Int32Array(4096);
  private mask = 4095;
  /** Fibonacci hashing: the top log2(size) bits of key * 2^32 / phi. */
  private shift = 20;
  private count = 0;
  private slot(key: number): number {
    let i = Math.imul(key, 0x9e3779b1) >>> this.shift;
    for (;;) {
      const k = this.keys[i];
      if (k === key || k === 0) return i;
      i = (i + 1) & this.mask;
    }
  }
  get(key: number): number {
    const i = this.slot(key);
    return this.keys[i] === key ? this.vals[i] : -1;
  }
  set(key: number, value: number): void {
    const i = this.slot(key);
    if (this.keys[i] !== key) {
      this.keys[i] = key;
      this.vals[i] = value;
      if (++this.count * 2 > this.mask) this.rehash();
      return;
    }
    this.vals[i] = value;
  }
  private rehash(): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Int32Array(keys.length * 2);
    this.vals = new Int32Array(keys.length * 2);
    this.mask = this.keys.length - 1;
    this.shift--;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] !== 0) {
        const j = this.slot(keys[i]);
        this.keys[j] = keys[i];
        this.vals[j] = vals[i];
      }
    }
  }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Rebuilds an SSA path from the best split of each subset. */
function rebuild(
  full: number,
  splitOf: (s: number) => number,
  howOf: (s: number) => number = () => 0,
): SsaPath {
  const ssa: SsaPath = [];
  let next = 32 - Math.clz32(full); // n (full = 2^n - 1 for the dense table; ids are operand bits)
  const build = (s: number): number => {
    if ((s & (s - 1)) === 0) return 31 - Math.clz32(s);
    const s1 = splitOf(s);
    const how = howOf(s);
    let a = build(s1);
    let b = build(s ^ s1);
    // An input whose own indices are summed first (a single-term step).
    if (how & 1) {
      ssa.push([a]);
      a = next++;
    }
    if (how & 2) {
      ssa.push([b]);
      b = next++;
    }
    ssa.push([a, b]);
    return next++;
  };
  if ((full & (full - 1)) === 0) return [[31 - Math.clz32(full)]];
  build(full);
  return ssa;
}

/**
 * Exact optimum over all pairwise paths (outer products included), for n <= ~18, where
 * an input may first sum its own indices (`leaves`, on by default): that choice only
 * changes the step that consumes the input, so it is made per split.
 * Subsets costing more than `cap` are dropped; returns undefined when nothing fits.
 */
// Long: opt_einsum's dense DP over subsets: the cost tables, the cap and the subset loop are one state.
export function denseDP(
  p: Problem,
  cap = Number.POSITIVE_INFINITY,
  leaves = true,
): Found | undefined {
  const n = p.n;
  const W = p.W;
  const N = 1 << n;
  const full = N - 1;
  const capEff = cap * (1 + 1e-9);
  const uni = new Uint32Array(N * W);
  for (let s = 1; s < N; s++) {
    const low = s & -s;
    const i = 31 - Math.clz32(low);
    const r = s ^ low;
    for (let w = 0; w < W; w++) uni[s * W + w] = uni[r * W + w] | p.sets[i * W + w];
  }
  const idx = new Uint32Array(N * W);
  for (let s = 1; s < N; s++) {
    // An input keeps all its labels until it takes part in a step.
    const c = (s & (s - 1)) === 0 ? 0 : full ^ s;
    const keep = c === 0 && (s & (s - 1)) === 0 ? -1 : 0;
    for (let w = 0; w < W; w++)
      idx[s * W + w] = uni[s * W + w] & (keep | p.out[w] | uni[c * W + w]);
  }
  const cost = new Float64Array(N).fill(Number.POSITIVE_INFINITY);
  const split = new Int32Array(N);
  const how = new Uint8Array(N);
  const alt = leaves ? p.leaves() : undefined;
  const altMask = alt ? alt.mask : 0;
  const x2 = new Uint32Array(W);
  for (let i = 0; i < n; i++) cost[1 << i] = 0;
  const limited = Number.isFinite(p.limit);
  const t = p.tab;
  const u = new Uint32Array(W);
  for (let s = 3; s < N; s++) {
    if ((s & (s - 1)) === 0) continue;
    if (limited && s !== full && p.size(idx, s * W) > p.limit) continue;
    const low = s & -s;
    const rest = s ^ low;
    let best = capEff;
    let bestSplit = -1;
    let sub = rest;
    if (W === 1) {
      const is = idx[s];
      do {
        sub = (sub - 1) & rest;
        const s1 = low | sub;
        const c1 = cost[s1];
        if (c1 >= best) continue;
        const s2 = rest ^ sub;
        const c = c1 + cost[s2];
        if (c >= best) continue;
        const x = idx[s1] | idx[s2];
        let step =
          t[x & 255] *
          t[256 + ((x >>> 8) & 255)] *
          t[512 + ((x >>> 16) & 255)] *
          t[768 + (x >>> 24)];
        if (x !== is) step *= 2;
        const total = c + step;
        if (total < best) {
          best = total;
          bestSplit = s1;
        }
      } while (sub !== 0);
    } else {
      do {
        sub = (sub - 1) & rest;
        const s1 = low | sub;
        const c1 = cost[s1];
        if (c1 >= best) continue;
        const s2 = rest ^ sub;
        const c = c1 + cost[s2];
        if (c >= best) continue;
        let inner = false;
        for (let w = 0; w < W; w++) {
          const x = idx[s1 * W + w] | idx[s2 * W + w];
          u[w] = x;
          if (x !== idx[s * W + w]) inner = true;
        }
        const step = p.size(u, 0) * (inner ? 2 : 1);
        const total = c + step;
        if (total < best) {
          best = total;
          bestSplit = s1;
        }
      } while (sub !== 0);
    }
    let bestHow = 0;
    if (altMask & s && alt) {
      // Splits with a single input on a side that could sum its own indices first.
      const trySplit = (s1: number) => {
        const s2 = s ^ s1;
        const c0 = cost[s1] + cost[s2];
        for (let h = 1; h < 4; h++) {
          const r1 = h & 1 ? s1 : 0;
          const r2 = h & 2 ? s2 : 0;
          if (
            (r1 && (r1 & (r1 - 1) || !(altMask & r1))) ||
            (r2 && (r2 & (r2 - 1) || !(altMask & r2)))
          )
            continue;
          const i1 = 31 - Math.clz32(s1);
          const i2 = 31 - Math.clz32(s2);
          let extra = 0;
          let inner = false;
          for (let w = 0; w < W; w++) {
            const a = r1 ? alt.sets[i1 * W + w] : idx[s1 * W + w];
            const b = r2 ? alt.sets[i2 * W + w] : idx[s2 * W + w];
            x2[w] = a | b;
            if (x2[w] !== idx[s * W + w]) inner = true;
          }
          if (r1) extra += alt.cost[i1];
          if (r2) extra += alt.cost[i2];
          const total = c0 + extra + p.size(x2, 0) * (inner ? 2 : 1);
          if (total < best) {
            best = total;
            bestSplit = s1;
            bestHow = h;
          }
        }
      };
      for (let x = s & altMask; x !== 0; x &= x - 1) {
        const single = x & -x;
        // The single input as the first half (its partner the rest), both orders.
        trySplit(single);
        trySplit(s ^ single);
      }
    }
    if (bestSplit >= 0) {
      cost[s] = best;
      split[s] = bestSplit;
      how[s] = bestHow;
    }
  }
  if (!Number.isFinite(cost[full])) return undefined;
  return {
    ssa: rebuild(
      full,
      (s) => split[s],
      (s) => how[s],
    ),
    cost: cost[full],
  };
}

export interface SparseOptions {
  /** Try splits whose halves share no non-output index too (exact, slower). */
  outer: boolean;
  /** Drop subsets costing more (a known path's cost). */
  cap: number;
  /** Work units (pair checks) before giving up; Infinity: none. */
  budget?: number;
  /** performance.now() past which the search gives up too. */
  deadline?: number;
  /** Let inputs sum their own indices first (default true). */
  leaves?: boolean;
}

/**
 * Bottom-up search over subsets (n <= 31) that cost at most `cap`. Returns the best path
 * found, undefined when nothing is at most cap, or "budget" when the work budget ran out.
 * With outer false, p must be connected through non-output indices.
 */
export function sparseDP(p: Problem, opts: SparseOptions): Found | undefined | "budget" {
  if (p.n > 31) throw new RangeError("sparseDP handles at most 31 operands");
  return new SparseSearch(p, opts).run();
}

/**
 * The sparse search's state. Subsets are "slots" in flat typed arrays; each level (subset
 * size) lists its slots, and once a level is complete it gets, per operand, a bitset of
 * its slots holding that operand, so the partners of a subset (disjoint, adjacent, cheap
 * enough) are found with a few word operations instead of a scan.
 */
class SparseSearch {
  private readonly p: Problem;
  private readonly n: number;
  private readonly W: number;
  private readonly full: number;
  private readonly cap: number;
  private readonly outer: boolean;
  private readonly budget: number;
  private readonly deadline: number;
  private readonly loBits: number;
  private readonly loMask: number;
  private readonly uLo: Uint32Array;
  private readonly uHi: Uint32Array;
  private readonly opNbr: Int32Array;
  private readonly limited: boolean;
  private readonly u: Uint32Array;
  private readonly kept: Uint32Array;
  private capSlots = 1024;
  private subset: Int32Array;
  private cost: Float64Array;
  private idx: Uint32Array;
  private split: Int32Array;
  private nbr: Int32Array;
  /** Elements of each subset's intermediate. */
  private sz: Float64Array;
  private slots = 0;
  private readonly slotOf = new IntMap();
  private readonly levels: number[][];
  /** Per slot: which side's input sums its own indices first (bit 0: the split's s1). */
  private how: Uint8Array;
  private readonly alt: Leaves | undefined;
  private readonly x2: Uint32Array;
  private readonly has: Uint32Array[] = [];
  private readonly wordsOf: number[] = [];
  private readonly keysOf: Float64Array[] = [];

  constructor(p: Problem, opts: SparseOptions) {
    const n = (this.n = p.n);
    const W = (this.W = p.W);
    this.p = p;
    this.full = n === 31 ? 0x7fffffff : (1 << n) - 1;
    this.cap = opts.cap * (1 + 1e-9);
    this.outer = opts.outer;
    this.budget = opts.budget ?? Number.POSITIVE_INFINITY;
    this.deadline = opts.deadline ?? Number.POSITIVE_INFINITY;
    this.limited = Number.isFinite(p.limit);
    this.u = new Uint32Array(W);
    this.kept = new Uint32Array(W);
    // Unions of arbitrary subsets from two half tables.
    const loBits = (this.loBits = Math.ceil(n / 2));
    const hiBits = n - loBits;
    this.loMask = (1 << loBits) - 1;
    const uLo = (this.uLo = new Uint32Array((1 << loBits) * W));
    const uHi = (this.uHi = new Uint32Array((1 << hiBits) * W));
    for (let s = 1; s < 1 << loBits; s++) {
      const low = s & -s;
      const i = 31 - Math.clz32(low);
      for (let w = 0; w < W; w++) uLo[s * W + w] = uLo[(s ^ low) * W + w] | p.sets[i * W + w];
    }
    for (let s = 1; s < 1 << hiBits; s++) {
      const low = s & -s;
      const i = loBits + 31 - Math.clz32(low);
      for (let w = 0; w < W; w++) uHi[s * W + w] = uHi[(s ^ low) * W + w] | p.sets[i * W + w];
    }
    // Operands sharing a non-output label.
    const opNbr = (this.opNbr = new Int32Array(n));
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        for (let w = 0; w < W; w++) {
          if ((p.sets[i * W + w] & p.sets[j * W + w] & ~p.out[w]) !== 0) {
            opNbr[i] |= 1 << j;
            break;
          }
        }
      }
    }
    this.subset = new Int32Array(this.capSlots);
    this.cost = new Float64Array(this.capSlots);
    this.idx = new Uint32Array(this.capSlots * W);
    this.split = new Int32Array(this.capSlots);
    this.nbr = new Int32Array(this.capSlots);
    this.sz = new Float64Array(this.capSlots);
    this.how = new Uint8Array(this.capSlots);
    const alt = opts.leaves === false ? undefined : p.leaves();
    this.alt = alt?.cost.some((c) => c >= 0) ? alt : undefined;
    this.x2 = new Uint32Array(W);
    this.levels = Array.from({ length: n + 1 }, () => []);
    for (let i = 0; i < n; i++) {
      const k = this.add(1 << i, 0, 0, 1);
      for (let w = 0; w < W; w++) this.idx[k * W + w] = p.sets[i * W + w];
      this.sz[k] = p.size(p.sets, i * W);
    }
  }

  private grow(): void {
    const W = this.W;
    this.capSlots *= 2;
    const c = this.capSlots;
    const subset = new Int32Array(c);
    subset.set(this.subset);
    this.subset = subset;
    const cost = new Float64Array(c);
    cost.set(this.cost);
    this.cost = cost;
    const idx = new Uint32Array(c * W);
    idx.set(this.idx);
    this.idx = idx;
    const split = new Int32Array(c);
    split.set(this.split);
    this.split = split;
    const nbr = new Int32Array(c);
    nbr.set(this.nbr);
    this.nbr = nbr;
    const sz = new Float64Array(c);
    sz.set(this.sz);
    this.sz = sz;
    const how = new Uint8Array(c);
    how.set(this.how);
    this.how = how;
  }

  private add(s: number, c: number, sp: number, level: number): number {
    if (this.slots === this.capSlots) this.grow();
    const k = this.slots++;
    this.subset[k] = s;
    this.cost[k] = c;
    this.split[k] = sp;
    let nb = 0;
    for (let x = s; x !== 0; x &= x - 1) nb |= this.opNbr[31 - Math.clz32(x & -x)];
    this.nbr[k] = nb & ~s;
    this.slotOf.set(s, k);
    this.levels[level].push(k);
    return k;
  }

  /** Tries slot a + slot b as one step. */
  private combine(a: number, b: number, level: number): void {
    const alt = this.alt;
    if (
      alt !== undefined &&
      ((a < this.n && alt.cost[a] >= 0) || (b < this.n && alt.cost[b] >= 0))
    ) {
      this.combineLeaves(a, b, level, alt);
      return;
    }
    const W = this.W;
    const { idx, cost, u, p } = this;
    const cap = this.cap;
    const c = cost[a] + cost[b];
    // The step costs at least size(A ∪ B): most pairs are rejected here.
    let su: number;
    if (W === 1) {
      const x = idx[a] | idx[b];
      u[0] = x;
      const t = p.tab;
      su =
        t[x & 255] * t[256 + ((x >>> 8) & 255)] * t[512 + ((x >>> 16) & 255)] * t[768 + (x >>> 24)];
    } else {
      for (let w = 0; w < W; w++) u[w] = idx[a * W + w] | idx[b * W + w];
      su = p.size(u, 0);
    }
    if (c + su > cap) return;
    const s1 = this.subset[a];
    const s = s1 | this.subset[b];
    let k = this.slotOf.get(s);
    if (k >= 0 && c + su >= cost[k]) return;
    // Labels kept by s: needed by the output or by an operand outside s.
    const kept = this.kept;
    let isInner = false;
    if (k < 0) {
      const comp = this.full ^ s;
      const lo = comp & this.loMask;
      const hi = comp >>> this.loBits;
      for (let w = 0; w < W; w++) {
        const kw = u[w] & (p.out[w] | this.uLo[lo * W + w] | this.uHi[hi * W + w]);
        kept[w] = kw;
        if (kw !== u[w]) isInner = true;
      }
    } else {
      for (let w = 0; w < W; w++) if (idx[k * W + w] !== u[w]) isInner = true;
    }
    const total = isInner ? c + 2 * su : c + su;
    if (total > cap) return;
    if (k < 0) {
      const ks = p.size(kept, 0);
      // Whatever consumes this intermediate later touches all its labels.
      if (s !== this.full && (total + ks > cap || (this.limited && ks > p.limit))) return;
      k = this.add(s, total, s1, level);
      for (let w = 0; w < W; w++) this.idx[k * W + w] = kept[w];
      this.sz[k] = ks;
    } else if (total < cost[k]) {
      cost[k] = total;
      this.split[k] = s1;
      this.how[k] = 0;
    }
  }

  /** combine() where an input (slot < n) may first sum its own indices: all four cases. */
  private combineLeaves(a: number, b: number, level: number, alt: Leaves): void {
    const { W, n, idx, cost, u, p, x2 } = this;
    const c = cost[a] + cost[b];
    const s1 = this.subset[a];
    const s = s1 | this.subset[b];
    let k = this.slotOf.get(s);
    const kept = this.kept;
    if (k < 0) {
      const comp = this.full ^ s;
      const lo = comp & this.loMask;
      const hi = comp >>> this.loBits;
      for (let w = 0; w < W; w++) {
        u[w] = idx[a * W + w] | idx[b * W + w];
        kept[w] = u[w] & (p.out[w] | this.uLo[lo * W + w] | this.uHi[hi * W + w]);
      }
    } else {
      for (let w = 0; w < W; w++) kept[w] = idx[k * W + w];
    }
    let total = Number.POSITIVE_INFINITY;
    let how = 0;
    for (let h = 0; h < 4; h++) {
      if ((h & 1 && (a >= n || alt.cost[a] < 0)) || (h & 2 && (b >= n || alt.cost[b] < 0)))
        continue;
      let extra = 0;
      let inner = false;
      for (let w = 0; w < W; w++) {
        const xa = h & 1 ? alt.sets[a * W + w] : idx[a * W + w];
        const xb = h & 2 ? alt.sets[b * W + w] : idx[b * W + w];
        x2[w] = xa | xb;
        if (x2[w] !== kept[w]) inner = true;
      }
      if (h & 1) extra += alt.cost[a];
      if (h & 2) extra += alt.cost[b];
      const t = c + extra + p.size(x2, 0) * (inner ? 2 : 1);
      if (t < total) {
        total = t;
        how = h;
      }
    }
    if (total > this.cap) return;
    if (k < 0) {
      const ks = p.size(kept, 0);
      if (s !== this.full && (total + ks > this.cap || (this.limited && ks > p.limit))) return;
      k = this.add(s, total, s1, level);
      for (let w = 0; w < W; w++) this.idx[k * W + w] = kept[w];
      this.sz[k] = ks;
      this.how[k] = how;
    } else if (total < cost[k]) {
      cost[k] = total;
      this.split[k] = s1;
      this.how[k] = how;
    }
  }

  /** Sorts a complete level by cost + size and builds its per-operand bitsets. */
  private finish(k: number): number {
    const L = this.levels[k];
    const { cost, sz, subset, n } = this;
    L.sort((x, y) => cost[x] + sz[x] - (cost[y] + sz[y]));
    const words = Math.max(1, Math.ceil(L.length / 32));
    const bits = new Uint32Array(n * words);
    const keys = new Float64Array(L.length);
    for (let j = 0; j < L.length; j++) {
      const bit = 1 << (j & 31);
      const wj = j >>> 5;
      keys[j] = cost[L[j]] + sz[L[j]];
      for (let x = subset[L[j]]; x !== 0; x &= x - 1)
        bits[(31 - Math.clz32(x & -x)) * words + wj] |= bit;
    }
    this.has[k] = bits;
    this.wordsOf[k] = words;
    this.keysOf[k] = keys;
    return n * words;
  }

  // Long: the driver of the DP search (subgraphs, cost cap loop) around denseDP.
  run(): Found | undefined | "budget" {
    const n = this.n;
    const cap = this.cap;
    let work = 0;
    let forbidden = new Uint32Array(64);
    let seen = new Uint32Array(64);
    for (let m = 2; m <= n; m++) {
      work += this.finish(m - 1);
      for (let k1 = 1; k1 <= m >> 1; k1++) {
        const k2 = m - k1;
        const A = this.levels[k1];
        const B = this.levels[k2];
        if (A.length === 0 || B.length === 0) continue;
        const same = k1 === k2;
        const words = this.wordsOf[k2];
        const bits = this.has[k2];
        const keys = this.keysOf[k2];
        if (forbidden.length < words) {
          forbidden = new Uint32Array(words * 2);
          seen = new Uint32Array(words * 2);
        }
        for (let ia = 0; ia < A.length; ia++) {
          const a = A[ia];
          const sa = this.subset[a];
          const ca = this.cost[a];
          // Partners cheap enough: a prefix of B (sorted by cost + size).
          const room = cap - ca;
          let lo = 0;
          let hi = keys.length;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (keys[mid] <= room) lo = mid + 1;
            else hi = mid;
          }
          const jmax = lo;
          if (jmax === 0 || (same && ia + 1 >= jmax)) continue;
          const roomA = room - this.sz[a];
          const wn = (jmax + 31) >>> 5;
          // Partners must avoid every operand of a (and, within one level, come after a).
          for (let w = 0; w < wn; w++) forbidden[w] = 0;
          for (let x = sa; x !== 0; x &= x - 1) {
            const row = (31 - Math.clz32(x & -x)) * words;
            for (let w = 0; w < wn; w++) forbidden[w] |= bits[row + w];
          }
          if (same) {
            const wa = ia >>> 5;
            for (let w = 0; w < wa; w++) forbidden[w] = -1;
            forbidden[wa] |= (ia & 31) === 31 ? -1 : (2 << (ia & 31)) - 1;
          }
          if ((jmax & 31) !== 0) forbidden[wn - 1] |= ~((1 << (jmax & 31)) - 1);
          work += (popcount(sa) + 2) * wn;
          if (this.outer) {
            for (let w = 0; w < wn; w++) {
              let c = ~forbidden[w];
              while (c !== 0) {
                const low = c & -c;
                c ^= low;
                const b = B[(w << 5) + 31 - Math.clz32(low)];
                work++;
                if (this.cost[b] <= roomA) {
                  work += 3;
                  this.combine(a, b, m);
                }
              }
            }
          } else {
            for (let w = 0; w < wn; w++) seen[w] = 0;
            for (let x = this.nbr[a]; x !== 0; x &= x - 1) {
              const row = (31 - Math.clz32(x & -x)) * words;
              work += wn;
              for (let w = 0; w < wn; w++) {
                const hv = bits[row + w];
                // Each partner once: through the first neighbour of a that it holds.
                let c = hv & ~forbidden[w] & ~seen[w];
                seen[w] |= hv;
                while (c !== 0) {
                  const low = c & -c;
                  c ^= low;
                  const b = B[(w << 5) + 31 - Math.clz32(low)];
                  work++;
                  if (this.cost[b] <= roomA) {
                    work += 3;
                    this.combine(a, b, m);
                  }
                }
              }
            }
          }
          if (work > this.budget || ((ia & 15) === 15 && now() > this.deadline)) return "budget";
        }
      }
    }
    const top = this.slotOf.get(this.full);
    if (top < 0) return undefined;
    const splitOf = (s: number) => this.split[this.slotOf.get(s)];
    const howOf = (s: number) => this.how[this.slotOf.get(s)];
    return { ssa: rebuild(this.full, splitOf, howOf), cost: this.cost[top] };
  }
}

/** Connected components of the operands through non-output indices. */
export function components(p: Problem): number[][] {
  const n = p.n;
  const W = p.W;
  const parent = Array.from({ length: n }, (_, i) => i);
  const find = (x: number): number => {
    while (parent[x] !== x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // For each label, join every operand that holds it with the first that does.
  const first = new Int32Array(W * 32).fill(-1);
  for (let i = 0; i < n; i++) {
    for (let w = 0; w < W; w++) {
      let x = p.sets[i * W + w] & ~p.out[w];
      while (x !== 0) {
        const low = x & -x;
        const l = w * 32 + 31 - Math.clz32(low);
        if (first[l] < 0) first[l] = i;
        else parent[find(i)] = find(first[l]);
        x ^= low;
      }
    }
  }
  const groups = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const r = find(i);
    let g = groups.get(r);
    if (!g) groups.set(r, (g = []));
    g.push(i);
  }
  return [...groups.values()];
}
