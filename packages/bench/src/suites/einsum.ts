/**
 * einsum: backend-opt-einsum's contraction paths on 37 expressions (matrix chains, tensor
 * networks of 3 to 40 operands — MPS, lattices, rings, a tree, a star, random networks —
 * ellipsis, broadcasting, traces and diagonals; packages/backend-opt-einsum/test/
 * expressions.ts), in three parts:
 * - search time: contractPath() per strategy (case = expression, impl = strategy); a
 *   strategy is left out where it takes too long (optimal above 14 operands, branch-all
 *   above 10, branch-2 above 20); the path costs (opt_einsum's cost model) go to one note
 *   per expression, as multiples of the best strategy's cost, with torch's left-to-right
 *   order for comparison;
 * - execution: einsum() through the dispatcher (the opt-einsum kernel, strategy auto, path
 *   cached) against the same kernel along torch's left-to-right path and against the
 *   core's reference loop nest (what runs when optEinsum.enabled is false), where each is
 *   cheap enough to time; matmul runs on backend-cpu-mkl's kernels, one thread;
 * - auto against dp on ten random 20-operand networks (3 indices per operand, sizes 2-10).
 * Ratios: geometric means of each strategy's cost over the best, greedy over left-to-right
 * (worst case), auto over dp, and execution speed-ups (other_ms / auto_ms).
 */
import "@backplane/backend-cpu-mkl";
import { optEinsum, STRATEGIES, type Strategy } from "@backplane/backend-opt-einsum";
import { EXPRESSIONS } from "@backplane/backend-opt-einsum/expressions";
import { backends, einsum, randn, type Tensor } from "@backplane/core";
import type { Harness } from "../harness.ts";

/** Largest operand count each strategy is timed on. */
const MAX_OPERANDS: Partial<Record<Strategy, number>> = {
  optimal: 14,
  "branch-all": 10,
  "branch-2": 20,
};
/** Execution is timed when the path's cost (multiply-adds, roughly) is below these. */
const EXEC_LIMIT = 3e7;
const REFERENCE_LIMIT = 2e6;

const geomean = (xs: number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);

function leftToRight(n: number): number[][] {
  return n === 1 ? [[0]] : Array.from({ length: n - 1 }, (_, t) => [0, t === 0 ? 1 : n - t - 1]);
}

export default {
  description:
    "contraction paths: cost and search time per strategy on 37 expressions, execution against left-to-right and the reference loop, auto vs dp on 20-operand networks",
  async run(h: Harness) {
    // One thread everywhere, as in the gemm suite: steps are small, threads only add noise.
    backends.openmp.setNumThreads(1);
    await backends.ready();
    const oe = optEinsum;
    const over: Record<string, number[]> = {};
    let greedyVsTorch = 0;
    for (const e of EXPRESSIONS) {
      const n = e.shapes.length;
      const strategies = STRATEGIES.filter((s) => n <= (MAX_OPERANDS[s] ?? 64));
      const costs: Record<string, number> = {};
      for (const s of strategies)
        costs[s] = oe.contractPath(e.equation, ...e.shapes, { strategy: s }).optCost;
      const torch = oe.contractPath(e.equation, ...e.shapes, { strategy: leftToRight(n) });
      const best = Math.min(...Object.values(costs));
      for (const s of strategies) (over[s] ??= []).push(costs[s] / best);
      greedyVsTorch = Math.max(greedyVsTorch, costs.greedy / torch.optCost);
      h.note(
        `${e.name} (${n} operands): best ${best.toExponential(3)}, naive ${torch.naiveCost.toExponential(2)}; cost / best: ${strategies
          .map((s) => `${s} ${(costs[s] / best).toFixed(3)}`)
          .join(", ")}, left-to-right ${(torch.optCost / best).toFixed(2)}`,
      );
      // Search time per strategy.
      const search: Record<string, () => unknown> = {};
      for (const s of strategies)
        search[s] = () => oe.contractPath(e.equation, ...e.shapes, { strategy: s });
      await h.compare(e.name, search, { samples: 5, sampleMs: 2 });
      // Execution.
      if (best > EXEC_LIMIT) continue;
      const operands: Tensor[] = e.shapes.map((s, i) => randn(s, { seed: i + 1 }));
      const exec: Record<string, () => unknown> = {
        "exec auto": () => einsum(e.equation, ...operands).dispose(),
      };
      if (torch.optCost <= 10 * EXEC_LIMIT) {
        exec["exec left-to-right"] = () =>
          oe.contract(e.equation, ...operands, { strategy: torch.path }).dispose();
      }
      if (torch.naiveCost <= REFERENCE_LIMIT) {
        exec["exec reference"] = () => {
          using _ = backends.optEinsum.flags({ enabled: false });
          einsum(e.equation, ...operands).dispose();
        };
      }
      const ms = await h.compare(e.name, exec, { samples: 9, sampleMs: 10 });
      if (ms["exec left-to-right"] !== undefined && torch.optCost > best * 1.5)
        h.ratio(`${e.name}: exec left-to-right / auto`, ms["exec left-to-right"] / ms["exec auto"]);
      if (ms["exec reference"] !== undefined)
        h.ratio(`${e.name}: exec reference / auto`, ms["exec reference"] / ms["exec auto"]);
      for (const t of operands) t.dispose();
    }
    for (const s of STRATEGIES) h.ratio(`cost / best, geomean: ${s}`, geomean(over[s]));
    h.ratio("greedy / left-to-right cost, worst expression", greedyVsTorch);

    // auto against dp on random 20-operand networks.
    const ratios: number[] = [];
    const times: number[] = [];
    for (let seed = 0; seed < 10; seed++) {
      const net = oe.randomEquation(20, 3, { dMin: 2, dMax: 10, seed });
      const dp = oe.contractPath(net.equation, ...net.shapes, { strategy: "dp" });
      const auto = oe.contractPath(net.equation, ...net.shapes, { strategy: "auto" });
      ratios.push(auto.optCost / dp.optCost);
      const ms = await h.compare(
        `random-20 seed ${seed}`,
        {
          auto: () => oe.contractPath(net.equation, ...net.shapes, { strategy: "auto" }),
          dp: () => oe.contractPath(net.equation, ...net.shapes, { strategy: "dp" }),
          greedy: () => oe.contractPath(net.equation, ...net.shapes, { strategy: "greedy" }),
        },
        { samples: 5, sampleMs: 5 },
      );
      times.push(ms.auto);
    }
    h.ratio("random-20: auto / dp cost, worst of 10", Math.max(...ratios));
    h.ratio("random-20: auto / dp cost, geomean of 10", geomean(ratios));
    h.ratio("random-20: auto search ms, worst of 10", Math.max(...times));
    h.note(
      "costs follow opt_einsum's flop_count: size of the step's indices x (max(1, terms - 1) + 1 if an index is summed)",
    );
  },
};
