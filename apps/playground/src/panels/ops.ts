import {
  backends,
  type DType,
  type Explanation,
  explain,
  FLOAT_DTYPES,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { getOp } from "@backplane/core/backend";
import { CASES, type CaseResult, makeRng, runCase } from "@backplane/testkit";
import { fmt, guarded, h, select, table } from "../dom.ts";

function tensorsIn(x: unknown): Tensor[] {
  if (x instanceof Tensor) return [x];
  if (Array.isArray(x)) return x.flatMap(tensorsIn);
  if (x && typeof x === "object") return Object.values(x).flatMap(tensorsIn);
  return [];
}
const mapTensors = (args: unknown[], f: (t: Tensor) => Tensor) =>
  args.map((a) =>
    a instanceof Tensor
      ? f(a)
      : a && typeof a === "object" && !Array.isArray(a)
        ? Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v instanceof Tensor ? f(v) : v]))
        : a,
  );

export function explanationTable(e: Explanation): HTMLElement {
  return table(
    ["", "kernel", "backend", "reason"],
    e.candidates.map((c) => [
      c.kernel === e.selected ? "=>" : c.accepted ? "ok" : "",
      h("code", {}, c.kernel),
      c.backend,
      h("span", { class: c.accepted ? "yes" : "no" }, c.reason),
    ]),
    { class: "explain" },
  );
}

export interface RunChoice {
  op: string;
  caseName: string;
  dtype: DType;
  /** "backend:kernel:device" or "" for the dispatcher's choice. */
  kernel: string;
}

/**
 * Why tensors cannot go to `device` on this page (its namespace's reason, e.g. WebGPU
 * without an adapter), or undefined when they can. Moving them would throw E_DEVICE.
 */
export function deviceRefusal(device: string): string | undefined {
  const type = device.split(":")[0];
  if (type === "cpu" || !backends.names().includes(type)) return undefined;
  const st = backends.namespace(type).status();
  return st.available ? undefined : `${type} is not available: ${st.reason ?? "no reason given"}`;
}

/** Runs one testkit case (the float64 reference judges it) and explains the dispatch. */
export async function runChoice(c: RunChoice): Promise<{ result: CaseResult; why?: Explanation }> {
  const oc = CASES[c.op].find((x) => x.name === c.caseName)!;
  const [backend, kernel, device] = c.kernel ? c.kernel.split("|") : [undefined, undefined, "cpu"];
  const refusal = deviceRefusal(device);
  if (refusal) {
    const base = { op: c.op, kernel: kernel ?? "-", backend, dtype: c.dtype, case: oc.name };
    return { result: { ...base, status: "refused", message: refusal } };
  }
  const args = oc.make(c.dtype, makeRng(1234));
  const devArgs = device === "cpu" ? args : mapTensors(args, (t) => t.to(device));
  let why: Explanation;
  try {
    why = kernel
      ? withKernelPriority(c.op, [kernel], () => explain(c.op, ...devArgs))
      : explain(c.op, ...devArgs);
  } finally {
    for (const t of new Set([...tensorsIn(args), ...tensorsIn(devArgs)])) t.dispose();
  }
  const result = await runCase(c.op, oc, c.dtype, { kernel, backend, device });
  return { result, why };
}

export function opsPanel(): HTMLElement {
  const ops = Object.keys(CASES).filter((o) => getOp(o));
  const opSel = select(ops, { id: "op" });
  const caseSel = select([], { id: "case" });
  const dtypeSel = select([...FLOAT_DTYPES], { id: "dtype" });
  const kernelSel = select([], { id: "kernel" });
  const out = h("div", { id: "op-out" });
  const fill = () => {
    const op = opSel.value;
    caseSel.replaceChildren(...CASES[op].map((c) => h("option", { value: c.name }, c.name)));
    const typical = CASES[op].find((c) => c.typical);
    if (typical) caseSel.value = typical.name;
    kernelSel.replaceChildren(
      h("option", { value: "" }, "auto (dispatcher's choice)"),
      ...getOp(op)!.kernels.map((k) =>
        h(
          "option",
          { value: `${k.backend}|${k.name}|${k.device}` },
          `${k.name} (${k.backend}, ${k.device})`,
        ),
      ),
    );
  };
  opSel.value = ops.includes("matmul") ? "matmul" : ops[0];
  opSel.addEventListener("change", fill);
  fill();
  const run = () =>
    guarded(out, async () => {
      out.replaceChildren(h("p", { class: "muted" }, "running…"));
      const { result: r, why } = await runChoice({
        op: opSel.value,
        caseName: caseSel.value,
        dtype: dtypeSel.value as DType,
        kernel: kernelSel.value,
      });
      out.replaceChildren(
        h(
          "div",
          {
            class: `result ${r.status}`,
            id: "op-result",
            "data-status": r.status,
            "data-error": r.error ?? "",
          },
          h("b", {}, r.status.toUpperCase()),
          ` ${r.op} [${r.case}] ${r.dtype} — kernel `,
          h("code", { id: "op-kernel" }, r.kernel),
          r.backend ? ` (${r.backend})` : "",
          ` — time `,
          h("span", { id: "op-ms" }, fmt.ms(r.ms)),
          ` — error vs float64 reference `,
          h("span", { id: "op-error" }, fmt.err(r.error)),
          r.tolerance !== undefined ? ` (tolerance ${fmt.err(r.tolerance)})` : "",
          r.where ? ` at ${r.where}` : "",
          r.message ? h("div", { class: "reason" }, r.message) : "",
        ),
        ...(why ? [h("h3", {}, "explain()"), explanationTable(why)] : []),
      );
    });
  return h(
    "section",
    {},
    h(
      "div",
      { class: "controls" },
      h("label", {}, "op ", opSel),
      h("label", {}, "case ", caseSel),
      h("label", {}, "dtype ", dtypeSel),
      h("label", {}, "kernel ", kernelSel),
      h("button", { id: "op-run", onclick: run }, "Run"),
    ),
    out,
  );
}
