/**
 * Subtree reconfiguration (after cotengra's subtree_reconfigure): a path is a binary
 * tree; take a node and expand its most expensive descendants until the window has up
 * to `k` leaves (operands or intermediates), then replace the window's inside with the
 * exact optimum over those leaves (the dense DP). The window's leaves and root keep
 * their labels, so the rest of the tree is unchanged and the saving is exact. Passes
 * repeat until one improves nothing or the deadline passes.
 */
import { denseDP } from "./dp.ts";
import type { Found } from "./greedy.ts";
import { Problem, type SsaPath, ssaCost } from "./problem.ts";

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

// Long: subtree reconfiguration: one pass over the tree sharing its cost tables.
export function reconfigure(
  p: Problem,
  start: Found,
  opts: {
    k?: number;
    deadline?: number;
    maxPasses?: number;
    minPasses?: number;
    /** Work before stopping (after minPasses): dense-DP iterations (3^k / 2 per window of k leaves) + 3000 per window. */
    budget?: number;
  } = {},
): Found {
  const n = p.n;
  const W = p.W;
  const K = opts.k ?? 8;
  const deadline = opts.deadline ?? Number.POSITIVE_INFINITY;
  if (n < 4 || start.ssa.some((s) => s.length !== 2)) return start;
  const total = 2 * n - 1;
  const left = new Int32Array(total).fill(-1);
  const right = new Int32Array(total).fill(-1);
  const sets = new Uint32Array(total * W);
  const cost = new Float64Array(total);
  sets.set(p.sets);
  // Node labels and step costs by replaying the path.
  {
    const alive = new Uint8Array(total);
    alive.fill(1, 0, n);
    const keep = new Uint32Array(W);
    const all = new Uint32Array(W);
    start.ssa.forEach(([a, b], t) => {
      const id = n + t;
      left[id] = a;
      right[id] = b;
      alive[a] = 0;
      alive[b] = 0;
      keep.set(p.out);
      for (let i = 0; i < id; i++)
        if (alive[i]) for (let w = 0; w < W; w++) keep[w] |= sets[i * W + w];
      let inner = false;
      for (let w = 0; w < W; w++) {
        all[w] = sets[a * W + w] | sets[b * W + w];
        const k = all[w] & keep[w];
        if (k !== all[w]) inner = true;
        sets[id * W + w] = k;
      }
      alive[id] = 1;
      cost[id] = p.size(all, 0) * (inner ? 2 : 1);
    });
  }
  const root = total - 1;
  const u = new Uint32Array(W);
  const stepCost = (node: number, a: number, b: number): number => {
    let inner = false;
    for (let w = 0; w < W; w++) {
      u[w] = sets[a * W + w] | sets[b * W + w];
      if (u[w] !== sets[node * W + w]) inner = true;
    }
    return p.size(u, 0) * (inner ? 2 : 1);
  };
  const passes = opts.maxPasses ?? 8;
  const budget = opts.budget ?? Number.POSITIVE_INFINITY;
  let spent = 0;
  const minPasses = opts.minPasses ?? 0;
  for (let pass = 0; pass < passes; pass++) {
    const timed = pass >= minPasses;
    let improved = false;
    // Internal nodes, most expensive first.
    const order = Array.from({ length: n - 1 }, (_, i) => n + i).sort((x, y) => cost[y] - cost[x]);
    for (const r of order) {
      if (timed && now() > deadline) break;
      // Grow the window: expand the most expensive internal leaf.
      const leaves = [left[r], right[r]];
      const inside = [r];
      while (leaves.length < K) {
        let pick = -1;
        for (let i = 0; i < leaves.length; i++) {
          const x = leaves[i];
          if (x >= n && (pick < 0 || cost[x] > cost[leaves[pick]])) pick = i;
        }
        if (pick < 0) break;
        const x = leaves[pick];
        leaves.splice(pick, 1, left[x], right[x]);
        inside.push(x);
      }
      if (leaves.length < 3) continue;
      // The window's dense DP, plus building and splicing it (~10k iterations' worth).
      spent += (3 ** leaves.length - 2 ** (leaves.length + 1) + 1) / 2 + 3000;
      if (timed && spent > budget) break;
      let before = 0;
      for (const x of inside) before += cost[x];
      const sub = new Uint32Array(leaves.length * W);
      leaves.forEach((x, i) => {
        sub.set(sets.subarray(x * W, x * W + W), i * W);
      });
      const sp = new Problem(leaves.length, W, sub, sets.slice(r * W, r * W + W), p.tab, p.limit);
      const best = denseDP(sp, before, false);
      if (!best || best.cost >= before * (1 - 1e-12)) continue;
      // Rebuild the inside: reuse the window's internal slots, the root last.
      const slots = inside.filter((x) => x !== r);
      const map = [...leaves];
      best.ssa.forEach(([a, b], t) => {
        const last = t === best.ssa.length - 1;
        const node = last ? r : slots[t];
        const x = map[a];
        const y = map[b];
        left[node] = x;
        right[node] = y;
        map.push(node);
      });
      // Labels of the new inner nodes: recompute bottom-up with the subset rule.
      const leafIndex = new Map(leaves.map((x, i) => [x, i]));
      const members = new Map<number, number>();
      const memberOf = (x: number): number => {
        const li = leafIndex.get(x);
        if (li !== undefined) return 1 << li;
        let m = members.get(x);
        if (m === undefined) {
          m = memberOf(left[x]) | memberOf(right[x]);
          members.set(x, m);
        }
        return m;
      };
      for (const node of slots) {
        const m = memberOf(node);
        for (let w = 0; w < W; w++) {
          let un = 0;
          let rest = sets[r * W + w];
          leaves.forEach((x, i) => {
            if (m & (1 << i)) un |= sets[x * W + w];
            else rest |= sets[x * W + w];
          });
          sets[node * W + w] = un & rest;
        }
      }
      // Children before parents: slots were assigned in step order, so recompute costs.
      for (const node of [...slots, r]) cost[node] = stepCost(node, left[node], right[node]);
      improved = true;
    }
    if (!improved || (pass + 1 >= minPasses && (spent > budget || now() > deadline))) break;
  }
  // Back to SSA: post-order from the root.
  const ssa: SsaPath = [];
  const ids = new Int32Array(total).fill(-1);
  for (let i = 0; i < n; i++) ids[i] = i;
  let next = n;
  const stack: number[] = [root];
  while (stack.length > 0) {
    const x = stack[stack.length - 1];
    const a = left[x];
    const b = right[x];
    if (ids[a] < 0) {
      stack.push(a);
      continue;
    }
    if (ids[b] < 0) {
      stack.push(b);
      continue;
    }
    stack.pop();
    ssa.push([ids[a], ids[b]]);
    ids[x] = next++;
  }
  const c = ssaCost(p, ssa).cost;
  return c < start.cost ? { ssa, cost: c } : start;
}
