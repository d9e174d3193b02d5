import { ArgumentError, backends, explain, randn, type Tensor } from "@backplane/core";
import { fmt, guarded, h, s, select, table } from "../dom.ts";
import { explanationTable } from "./ops.ts";

interface Step {
  operands: number[];
  einsum: string;
  remaining: string;
  removed: string;
  cost: number;
  size: number;
  kind: string;
  scaling: number;
}
interface PathInfoLike {
  path: number[][];
  steps: Step[];
  naiveCost: number;
  optCost: number;
  speedup: number;
  largestIntermediate: number;
  algorithm: string;
  searchMs: number;
  inputSubscripts: string;
  outputSubscript: string;
  toString(): string;
}

/** What the playground uses of backend-opt-einsum's getOptEinsum() API. */
interface OptEinsumLike {
  strategies?: readonly string[];
  contractPath(equation: string, ...shapesAndOptions: unknown[]): PathInfoLike;
}

export function optEinsumApi(): { api?: OptEinsumLike; reason?: string } {
  const ns = backends.optEinsum;
  const api = ns.getOptEinsum() as OptEinsumLike | undefined;
  if (typeof api?.contractPath === "function") return { api };
  return {
    reason:
      ns.status().reason ??
      "backends.optEinsum.getOptEinsum is not there (is @backplane/backend-opt-einsum loaded?)",
  };
}

/** "8x16, 16x32" or "[8,16],[16,32]" -> [[8,16],[16,32]] */
export function parseShapes(text: string): number[][] {
  const groups = text.includes("[")
    ? [...text.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1])
    : text.split(/[,;]\s*/);
  return groups.map((g) =>
    g
      .split(/[x×,\s]+/)
      .filter(Boolean)
      .map((d) => {
        const n = Number(d);
        if (!Number.isInteger(n) || n < 0)
          throw new ArgumentError(`bad dimension ${JSON.stringify(d)} in ${JSON.stringify(g)}`);
        return n;
      }),
  );
}

interface Node {
  label: string;
  children: Node[];
  step?: Step;
  x: number;
  depth: number;
}

/** The contraction tree of a linear path: each step pops its operands and appends the result. */
// Long: one SVG tree drawing.
export function drawTree(info: PathInfoLike): SVGElement {
  const inputs = info.inputSubscripts.split(",");
  let list: Node[] = inputs.map((l, i) => ({
    label: l || "(scalar)",
    children: [],
    x: i,
    depth: 0,
  }));
  const leaves = list.length;
  info.steps.forEach((st) => {
    const picked = st.operands.map((i) => list[i]);
    list = list.filter((_, i) => !st.operands.includes(i));
    const label = st.einsum.split("->")[1] ?? st.einsum;
    const node: Node = {
      label: label || "(scalar)",
      children: picked,
      step: st,
      x: picked.reduce((a, n) => a + n.x, 0) / picked.length,
      depth: 1 + Math.max(...picked.map((n) => n.depth)),
    };
    list.push(node);
  });
  const root =
    list.length === 1
      ? list[0]
      : {
          label: info.outputSubscript,
          children: list,
          x: list.reduce((a, n) => a + n.x, 0) / list.length,
          depth: 1 + Math.max(...list.map((n) => n.depth)),
        };
  const W = Math.max(420, leaves * 110);
  const levels = root.depth + 1;
  const H = 70 + (levels - 1) * 78;
  const px = (x: number) => 55 + (leaves === 1 ? (W - 110) / 2 : (x / (leaves - 1)) * (W - 110));
  const py = (d: number) => H - 35 - d * 78;
  const maxCost = Math.max(1, ...info.steps.map((x) => x.cost));
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    id: "einsum-tree",
    class: "tree",
  });
  const edges: SVGElement[] = [];
  const nodes: SVGElement[] = [];
  const walk = (n: Node) => {
    for (const c of n.children) {
      edges.push(
        s("line", {
          x1: px(n.x),
          y1: py(n.depth),
          x2: px(c.x),
          y2: py(c.depth),
          stroke: "#94a3b8",
          "stroke-width": 1.5,
        }),
      );
      walk(c);
    }
    const leaf = n.children.length === 0;
    const r = leaf ? 18 : 10 + 12 * Math.sqrt((n.step?.cost ?? 0) / maxCost);
    nodes.push(
      s(
        "g",
        { class: leaf ? "leaf" : "step" },
        s("circle", {
          cx: px(n.x),
          cy: py(n.depth),
          r,
          fill: leaf ? "#e0f2fe" : "#fde68a",
          stroke: leaf ? "#0284c7" : "#b45309",
        }),
        s(
          "text",
          { x: px(n.x), y: py(n.depth) + 4, "text-anchor": "middle", class: "node" },
          n.label,
        ),
        n.step
          ? s(
              "text",
              { x: px(n.x) + r + 4, y: py(n.depth) - 4, class: "cost" },
              `${n.step.kind} cost ${fmt.num(n.step.cost)}`,
            )
          : null,
        n.step
          ? s("title", {}, `${n.step.einsum}: cost ${n.step.cost}, result ${n.step.size} elements`)
          : null,
      ),
    );
  };
  walk(root);
  svg.append(...edges, ...nodes);
  return svg;
}

export function einsumPanel(): HTMLElement {
  const eq = h("input", { id: "einsum-eq", value: "ab,bc,cd,de->ae", size: 28 });
  const shapes = h("input", { id: "einsum-shapes", value: "8x64, 64x4, 4x64, 64x8", size: 36 });
  const { api, reason } = optEinsumApi();
  const strategies: string[] = api?.strategies
    ? [...api.strategies]
    : ["auto", "optimal", "dp", "greedy"];
  const strategy = select(strategies, { id: "einsum-strategy" });
  if (strategies.includes("greedy")) strategy.value = "greedy";
  const out = h("div", { id: "einsum-out" });
  const draw = () =>
    guarded(out, async () => {
      const { api, reason } = optEinsumApi();
      if (!api) {
        out.replaceChildren(
          h("div", { class: "no", id: "einsum-reason" }, `not available: ${reason}`),
        );
        return;
      }
      const shp = parseShapes(shapes.value);
      const info = api.contractPath(eq.value, ...shp, { strategy: strategy.value }) as PathInfoLike;
      // Run it too: the dispatcher's pick for einsum, and the result against the plain reference.
      const ops: Tensor[] = shp.map((sh) => randn(sh));
      let run: HTMLElement;
      try {
        const why = explain("einsum", eq.value, ...ops);
        run = h("div", {}, h("h3", {}, 'explain("einsum", …)'), explanationTable(why));
      } finally {
        for (const t of ops) t.dispose();
      }
      out.replaceChildren(
        h(
          "p",
          { id: "einsum-summary" },
          `${info.algorithm} (${info.searchMs.toFixed(2)} ms): path ${JSON.stringify(info.path)} — cost ${fmt.num(info.optCost)} vs naive ${fmt.num(info.naiveCost)} (speedup ${info.speedup.toFixed(1)}×), largest intermediate ${fmt.num(info.largestIntermediate)} elements`,
        ),
        drawTree(info),
        table(
          ["step", "operands", "einsum", "kind", "cost", "result size", "remaining"],
          info.steps.map((st, i) => [
            String(i + 1),
            JSON.stringify(st.operands),
            h("code", {}, st.einsum),
            st.kind,
            fmt.num(st.cost),
            fmt.num(st.size),
            h("code", {}, st.remaining),
          ]),
          { id: "einsum-steps" },
        ),
        h("pre", {}, String(info)),
        run,
      );
    });
  strategy.addEventListener("change", draw);
  queueMicrotask(draw);
  return h(
    "section",
    {},
    api ? "" : h("p", { class: "no" }, `not available: ${reason}`),
    h(
      "div",
      { class: "controls" },
      h("label", {}, "expression ", eq),
      h("label", {}, "shapes ", shapes),
      h("label", {}, "strategy ", strategy),
      h("button", { id: "einsum-run", onclick: draw }, "Contract path"),
    ),
    out,
  );
}
