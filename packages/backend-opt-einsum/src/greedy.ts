/**
 * Greedy contraction (after opt_einsum's `greedy`): repeatedly contract the pair of
 * operands sharing an index whose result is smallest relative to its inputs
 * (size(result) - size(A) - size(B), "memory removed"), then join what is left (pieces
 * that share only output indices, or none) cheapest step first. Candidate scores are
 * kept, and after a step only the pairs touching its labels are rescored.
 *
 * With `rng`, a step is drawn among the best `nbranch` candidates with Boltzmann weights
 * (random-greedy's trials); a trial stops as soon as it costs more than `bound`.
 * All buffers live in one Contractor that is reset between trials.
 */
import { occurrenceMasks, type Problem, type SsaPath } from "./problem.ts";

/** "memory": size(result) - size(A) - size(B) (opt_einsum's default); "size": size(result). */
export type GreedyScore = "memory" | "size";

export interface GreedyOptions {
  score?: GreedyScore;
  rng?: () => number;
  /** Relative temperature of the Boltzmann choice (with rng). */
  temperature?: number;
  /** Candidates the random choice draws from (default 8). */
  nbranch?: number;
  /** Abandon the trial once its cost reaches this (returns undefined). */
  bound?: number;
}

export interface Found {
  ssa: SsaPath;
  cost: number;
}

/** Working state of a greedy contraction, reusable across trials (reset()). */
export class Contractor {
  readonly p: Problem;
  readonly W: number;
  readonly L: number;
  readonly cap: number;
  readonly sets: Uint32Array;
  readonly size: Float64Array;
  readonly alive: Uint8Array;
  /** How many live operands hold each label. */
  readonly count: Int32Array;
  readonly ones: Uint32Array;
  readonly twos: Uint32Array;
  /** Live holders of each non-output label: holders[l * cap + i], i < nHolders[l]. */
  readonly holders: Int32Array;
  readonly nHolders: Int32Array;
  next = 0;
  liveCount = 0;
  cost = 0;
  ssa: SsaPath = [];
  /** Results of the last evaluate(). */
  lastCost = 0;
  lastSize = 0;
  private readonly scratch: Uint32Array;
  private readonly init: {
    count: Int32Array;
    ones: Uint32Array;
    twos: Uint32Array;
    holders: Int32Array;
    nHolders: Int32Array;
    size: Float64Array;
  };

  constructor(p: Problem) {
    this.p = p;
    const W = (this.W = p.W);
    const L = (this.L = W * 32);
    const cap = (this.cap = 2 * p.n + 1);
    this.sets = new Uint32Array(cap * W);
    this.size = new Float64Array(cap);
    this.alive = new Uint8Array(cap);
    this.count = new Int32Array(L);
    this.ones = new Uint32Array(W);
    this.twos = new Uint32Array(W);
    this.holders = new Int32Array(L * cap);
    this.nHolders = new Int32Array(L);
    this.scratch = new Uint32Array(W);
    const ids = Array.from({ length: p.n }, (_, i) => i);
    occurrenceMasks(p, p.sets, ids, p.n, this.ones, this.twos);
    for (let i = 0; i < p.n; i++) {
      this.size[i] = p.size(p.sets, i * W);
      for (let w = 0; w < W; w++) {
        let x = p.sets[i * W + w];
        const inner = ~p.out[w];
        while (x !== 0) {
          const low = x & -x;
          const l = (w << 5) + 31 - Math.clz32(low);
          this.count[l]++;
          if (low & inner) this.holders[l * cap + this.nHolders[l]++] = i;
          x ^= low;
        }
      }
    }
    this.init = {
      count: this.count.slice(),
      ones: this.ones.slice(),
      twos: this.twos.slice(),
      holders: this.holders.slice(),
      nHolders: this.nHolders.slice(),
      size: this.size.slice(0, p.n),
    };
    this.reset();
  }

  reset(): void {
    const { p, init } = this;
    this.sets.set(p.sets);
    this.size.set(init.size);
    this.alive.fill(0);
    this.alive.fill(1, 0, p.n);
    this.count.set(init.count);
    this.ones.set(init.ones);
    this.twos.set(init.twos);
    this.holders.set(init.holders);
    this.nHolders.set(init.nHolders);
    this.next = p.n;
    this.liveCount = p.n;
    this.cost = 0;
    this.ssa = [];
  }

  /**
   * Cost (lastCost) and result size (lastSize) of contracting a and b now; the result's
   * labels are written to slot `into` when it is >= 0.
   */
  evaluate(a: number, b: number, into: number): void {
    const W = this.W;
    const { sets, ones, twos } = this;
    const t = this.p.tab;
    let inner = false;
    let ks = 1;
    let us = 1;
    for (let w = 0; w < W; w++) {
      const x = sets[a * W + w];
      const y = sets[b * W + w];
      const u = x | y;
      const rem = (u & ones[w]) | (x & y & twos[w]);
      const k = u & ~rem;
      if (into >= 0) sets[into * W + w] = k;
      const base = w << 10;
      if (rem !== 0) {
        inner = true;
        us *=
          t[base + (u & 255)] *
          t[base + 256 + ((u >>> 8) & 255)] *
          t[base + 512 + ((u >>> 16) & 255)] *
          t[base + 768 + (u >>> 24)];
      }
      if (k !== 0) {
        const s =
          t[base + (k & 255)] *
          t[base + 256 + ((k >>> 8) & 255)] *
          t[base + 512 + ((k >>> 16) & 255)] *
          t[base + 768 + (k >>> 24)];
        ks *= s;
        if (rem === 0) us *= s;
      }
    }
    this.lastSize = ks;
    this.lastCost = inner ? 2 * us : us;
  }

  /** Contracts a and b into a new operand; returns its id. */
  contract(a: number, b: number): number {
    const c = this.next++;
    this.evaluate(a, b, c);
    this.cost += this.lastCost;
    this.size[c] = this.lastSize;
    this.ssa.push([a, b]);
    this.retire(a);
    this.retire(b);
    this.admit(c);
    return c;
  }

  /** Contracts every live operand in one step (when a memory limit allows nothing smaller). */
  contractAll(): number {
    const ids = this.live();
    const W = this.W;
    const c = this.next++;
    const all = this.scratch;
    all.fill(0);
    for (const i of ids) for (let w = 0; w < W; w++) all[w] |= this.sets[i * W + w];
    let inner = false;
    for (let w = 0; w < W; w++) {
      const k = all[w] & this.p.out[w];
      if (k !== all[w]) inner = true;
      this.sets[c * W + w] = k;
    }
    this.cost += this.p.size(all, 0) * (Math.max(1, ids.length - 1) + (inner ? 1 : 0));
    this.size[c] = this.p.size(this.sets, c * W);
    this.ssa.push(ids);
    for (const i of ids) this.retire(i);
    this.admit(c);
    return c;
  }

  private retire(id: number): void {
    this.alive[id] = 0;
    this.liveCount--;
    this.change(id, -1);
  }

  private admit(id: number): void {
    this.alive[id] = 1;
    this.liveCount++;
    this.change(id, 1);
  }

  private change(id: number, delta: number): void {
    const W = this.W;
    const cap = this.cap;
    for (let w = 0; w < W; w++) {
      let x = this.sets[id * W + w];
      const out = this.p.out[w];
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const l = (w << 5) + 31 - Math.clz32(low);
        const c = (this.count[l] += delta);
        if (low & out) continue;
        this.ones[w] = c === 1 ? this.ones[w] | low : this.ones[w] & ~low;
        this.twos[w] = c === 2 ? this.twos[w] | low : this.twos[w] & ~low;
        const base = l * cap;
        if (delta > 0) this.holders[base + this.nHolders[l]++] = id;
        else {
          const n = this.nHolders[l];
          for (let i = 0; i < n; i++) {
            if (this.holders[base + i] === id) {
              this.holders[base + i] = this.holders[base + n - 1];
              this.nHolders[l] = n - 1;
              break;
            }
          }
        }
      }
    }
  }

  live(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.next; i++) if (this.alive[i]) out.push(i);
    return out;
  }

  /** Appends the live operands sharing a non-output label with id to `out` (marking them). */
  neighbours(id: number, mark: Int32Array, stamp: number, out: number[]): void {
    const W = this.W;
    const cap = this.cap;
    mark[id] = stamp;
    for (let w = 0; w < W; w++) {
      let x = this.sets[id * W + w] & ~this.p.out[w];
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const l = (w << 5) + 31 - Math.clz32(low);
        const base = l * cap;
        const n = this.nHolders[l];
        for (let i = 0; i < n; i++) {
          const j = this.holders[base + i];
          if (mark[j] !== stamp) {
            mark[j] = stamp;
            out.push(j);
          }
        }
      }
    }
  }

  /**
   * Joins what is left when no two live operands share a non-output label: the
   * cheapest pair first (smaller result on ties), everything at once if the memory
   * limit allows no pair. False when the cost passed `bound`.
   */
  finishOuter(bound = Number.POSITIVE_INFINITY): boolean {
    for (;;) {
      const ids = this.live();
      if (ids.length <= 1) return true;
      let ba = -1;
      let bb = -1;
      let bestCost = Number.POSITIVE_INFINITY;
      let bestSize = Number.POSITIVE_INFINITY;
      for (let i = 0; i < ids.length; i++) {
        for (let j = i + 1; j < ids.length; j++) {
          this.evaluate(ids[i], ids[j], -1);
          const ks = this.lastSize;
          if (ks > this.p.limit && ids.length > 2) continue;
          const cost = this.lastCost;
          if (cost < bestCost || (cost === bestCost && ks < bestSize)) {
            ba = ids[i];
            bb = ids[j];
            bestCost = cost;
            bestSize = ks;
          }
        }
      }
      if (ba < 0) this.contractAll();
      else this.contract(ba, bb);
      if (this.cost > bound) return false;
    }
  }
}

/** Candidate pairs of a greedy run, in flat arrays. */
class Candidates {
  a: Int32Array;
  b: Int32Array;
  score: Float64Array;
  cost: Float64Array;
  n = 0;
  constructor(capacity: number) {
    this.a = new Int32Array(capacity);
    this.b = new Int32Array(capacity);
    this.score = new Float64Array(capacity);
    this.cost = new Float64Array(capacity);
  }
  push(a: number, b: number, score: number, cost: number): void {
    if (this.n === this.a.length) {
      const grow = <T extends Int32Array | Float64Array>(x: T): T => {
        const y = new (x.constructor as new (n: number) => T)(x.length * 2);
        y.set(x as never);
        return y;
      };
      this.a = grow(this.a);
      this.b = grow(this.b);
      this.score = grow(this.score);
      this.cost = grow(this.cost);
    }
    const i = this.n++;
    this.a[i] = a;
    this.b[i] = b;
    this.score[i] = score;
    this.cost[i] = cost;
  }
}

/** Reusable greedy runner over one problem. */
export class Greedy {
  readonly p: Problem;
  readonly st: Contractor;
  private readonly cands: Candidates;
  private readonly mark: Int32Array;
  private readonly dirty: Int32Array;
  private stamp = 0;
  private readonly list: number[] = [];
  private readonly pickI: Int32Array;
  private readonly pickW: Float64Array;

  constructor(p: Problem) {
    this.p = p;
    this.st = new Contractor(p);
    this.cands = new Candidates(Math.max(16, 4 * p.n));
    this.mark = new Int32Array(this.st.cap);
    this.dirty = new Int32Array(this.st.cap);
    this.pickI = new Int32Array(64);
    this.pickW = new Float64Array(64);
  }

  private consider(x: number, y: number, kind: GreedyScore): void {
    const st = this.st;
    const a = x < y ? x : y;
    const b = x < y ? y : x;
    st.evaluate(a, b, -1);
    if (st.lastSize > this.p.limit && st.liveCount > 2) return;
    const cost = st.lastCost;
    const ks = st.lastSize;
    const score = kind === "memory" ? ks - st.size[a] - st.size[b] : ks;
    this.cands.push(a, b, score, cost);
  }

  /** One run; undefined when it was abandoned at `bound`. */
  // Long: the greedy contraction loop: its priority queue, remaining set and path are one state.
  run(opts: GreedyOptions = {}): Found | undefined {
    const p = this.p;
    const n = p.n;
    if (n === 1) return { ssa: [[0]], cost: singleCost(p) };
    const kind = opts.score ?? "memory";
    const bound = opts.bound ?? Number.POSITIVE_INFINITY;
    const rng = opts.rng;
    const nbranch = Math.min(opts.nbranch ?? 8, 64);
    const temperature = opts.temperature ?? 1;
    const st = this.st;
    st.reset();
    const C = this.cands;
    C.n = 0;
    const mark = this.mark;
    const dirty = this.dirty;
    const list = this.list;
    for (let i = 0; i < n; i++) {
      list.length = 0;
      st.neighbours(i, mark, ++this.stamp, list);
      for (const j of list) if (j > i) this.consider(i, j, kind);
    }
    const pickI = this.pickI;
    const pickW = this.pickW;
    while (C.n > 0) {
      let chosen = 0;
      if (!rng) {
        for (let i = 1; i < C.n; i++) {
          const s = C.score[i];
          const bs = C.score[chosen];
          if (
            s < bs ||
            (s === bs &&
              (C.cost[i] < C.cost[chosen] ||
                (C.cost[i] === C.cost[chosen] &&
                  (C.a[i] < C.a[chosen] || (C.a[i] === C.a[chosen] && C.b[i] < C.b[chosen])))))
          )
            chosen = i;
        }
      } else {
        // The nbranch best (insertion into a short sorted list), then a Boltzmann draw.
        let k = 0;
        for (let i = 0; i < C.n; i++) {
          const s = C.score[i];
          if (k === nbranch && s >= C.score[pickI[k - 1]]) continue;
          let at = k < nbranch ? k++ : k - 1;
          while (at > 0 && C.score[pickI[at - 1]] > s) {
            pickI[at] = pickI[at - 1];
            at--;
          }
          pickI[at] = i;
        }
        const cmin = C.score[pickI[0]];
        const temp = temperature * Math.max(1, Math.abs(cmin));
        let total = 0;
        for (let i = 0; i < k; i++) {
          const e = Math.exp(-(C.score[pickI[i]] - cmin) / temp);
          pickW[i] = e;
          total += e;
        }
        let r = rng() * total;
        chosen = pickI[k - 1];
        for (let i = 0; i < k; i++) {
          r -= pickW[i];
          if (r <= 0) {
            chosen = pickI[i];
            break;
          }
        }
      }
      const a = C.a[chosen];
      const b = C.b[chosen];
      // Operands whose candidate scores change: those sharing a label with a or b.
      const s = ++this.stamp;
      list.length = 0;
      st.neighbours(a, mark, s, list);
      st.neighbours(b, mark, s, list);
      const c = st.contract(a, b);
      // Strictly past the bound: a cost of Infinity (sizes past float64) under the default
      // bound of Infinity is a path, not an abandoned trial.
      if (st.cost > bound) return undefined;
      const ds = ++this.stamp;
      let nd = 0;
      for (const x of list) {
        if (x !== a && x !== b && st.alive[x]) {
          dirty[nd++] = x;
          mark[x] = ds;
        }
      }
      dirty[nd++] = c;
      mark[c] = ds;
      mark[a] = ds;
      mark[b] = ds;
      // Drop candidates touching a, b or a dirty operand; rescore the dirty ones.
      let w = 0;
      for (let i = 0; i < C.n; i++) {
        if (mark[C.a[i]] === ds || mark[C.b[i]] === ds) continue;
        if (w !== i) {
          C.a[w] = C.a[i];
          C.b[w] = C.b[i];
          C.score[w] = C.score[i];
          C.cost[w] = C.cost[i];
        }
        w++;
      }
      C.n = w;
      for (let d = 0; d < nd; d++) {
        const x = dirty[d];
        list.length = 0;
        const ns = ++this.stamp;
        st.neighbours(x, mark, ns, list);
        for (const y of list) {
          // A pair of two dirty operands is added once, from the earlier one.
          let yd = -1;
          for (let e = 0; e < nd; e++) if (dirty[e] === y) yd = e;
          if (yd >= 0 && yd < d) continue;
          this.consider(x, y, kind);
        }
      }
    }
    if (!st.finishOuter(bound)) return undefined;
    return { ssa: st.ssa, cost: st.cost };
  }
}

/** One greedy run on p. */
export function greedyRun(p: Problem, opts: GreedyOptions = {}): Found | undefined {
  return new Greedy(p).run(opts);
}

/** Cost of contracting a single operand (summing its non-output labels). */
export function singleCost(p: Problem): number {
  const W = p.W;
  let inner = false;
  const k = new Uint32Array(W);
  for (let w = 0; w < W; w++) {
    k[w] = p.sets[w];
    if ((p.sets[w] & ~p.out[w]) !== 0) inner = true;
  }
  return p.size(k, 0) * (inner ? 2 : 1);
}

/** torch's order: ((A B) C) D ... */
export function leftToRight(n: number): SsaPath {
  if (n === 1) return [[0]];
  const out: SsaPath = [[0, 1]];
  for (let i = 2; i < n; i++) out.push([n + i - 2, i]);
  return out;
}
