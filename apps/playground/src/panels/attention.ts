import {
  type DType,
  deviceTypes,
  explain,
  FLOAT_DTYPES,
  SDPAParams,
  SDPBackend,
  sdpaRefusals,
  type Tensor,
} from "@backplane/core";
import { boolMask, makeRng, randomTensor, runCase } from "@backplane/testkit";
import { fmt, guarded, h, select, table } from "../dom.ts";
import { explanationTable } from "./ops.ts";

const FAMILIES = Object.values(SDPBackend).filter((f) => f !== "ERROR") as SDPBackend[];

export interface AttentionInputs {
  batch: number;
  heads: number;
  L: number;
  S: number;
  E: number;
  mask: "none" | "bool" | "additive";
  causal: boolean;
  dropout: number;
  dtype: DType;
  device: string;
}

function makeArgs(p: AttentionInputs, dtype: DType, seed = 7): unknown[] {
  const rng = makeRng(seed);
  const q = randomTensor([p.batch, p.heads, p.L, p.E], dtype, rng);
  const k = randomTensor([p.batch, p.heads, p.S, p.E], dtype, rng);
  const v = randomTensor([p.batch, p.heads, p.S, p.E], dtype, rng);
  let attnMask: Tensor | null = null;
  if (p.mask === "additive") attnMask = randomTensor([p.L, p.S], dtype, rng);
  if (p.mask === "bool") attnMask = boolMask([p.L, p.S], rng);
  return [q, k, v, { attnMask, dropoutP: p.dropout, isCausal: p.causal, seed: 1 }];
}

// Long: one panel's DOM and handlers.
export function attentionPanel(): HTMLElement {
  const num = (id: string, v: number, min = 1) =>
    h("input", { id, type: "number", value: String(v), min, step: 1, class: "small" });
  const batch = num("sdpa-batch", 2);
  const heads = num("sdpa-heads", 4);
  const L = num("sdpa-L", 64);
  const S = num("sdpa-S", 64);
  const E = num("sdpa-E", 32);
  const mask = select(["none", "bool", "additive"], { id: "sdpa-mask" });
  const causal = h("input", { id: "sdpa-causal", type: "checkbox" });
  const dropout = h("input", {
    id: "sdpa-dropout",
    type: "number",
    value: "0",
    min: 0,
    max: 1,
    step: 0.05,
    class: "small",
  });
  const dtype = select([...FLOAT_DTYPES], { id: "sdpa-dtype" });
  const device = select(deviceTypes(), { id: "sdpa-device" });
  const out = h("div", { id: "sdpa-out" });
  const inputs = (): AttentionInputs => ({
    batch: Number(batch.value),
    heads: Number(heads.value),
    L: Number(L.value),
    S: Number(S.value),
    E: Number(E.value),
    mask: mask.value as AttentionInputs["mask"],
    causal: causal.checked,
    dropout: Number(dropout.value),
    dtype: dtype.value as DType,
    device: device.value,
  });
  const check = () =>
    guarded(out, async () => {
      const p = inputs();
      const args = makeArgs(p, p.dtype);
      const owned = args.flatMap((a) =>
        a && typeof a === "object" && "dispose" in (a as object) ? [a as Tensor] : [],
      );
      const o = args[3] as { attnMask: Tensor | null };
      if (o.attnMask) owned.push(o.attnMask);
      const onDev = (t: Tensor | null) => (t && p.device !== "cpu" ? t.to(p.device) : t);
      const [q, k, v] = (args.slice(0, 3) as Tensor[]).map((t) => onDev(t)!);
      const m = onDev(o.attnMask);
      for (const t of [q, k, v, m]) if (t && !owned.includes(t)) owned.push(t);
      try {
        const why = explain("scaledDotProductAttention", q, k, v, {
          attnMask: m,
          dropoutP: p.dropout,
          isCausal: p.causal,
        });
        const params = new SDPAParams(q, k, v, m, p.dropout, p.causal);
        const fam = FAMILIES.map((f) => {
          const reasons = sdpaRefusals(f, params);
          return [
            h("code", {}, f),
            reasons.length === 0
              ? h("span", { class: "yes" }, "accepts")
              : h("span", { class: "no" }, "refuses"),
            h(
              "ul",
              { class: "reasons" },
              reasons.map((r) => h("li", {}, r)),
            ),
          ];
        });
        // Run the selected kernel against the float64 reference (not with dropout: kernels draw their own masks).
        let judged: HTMLElement = h(
          "p",
          { class: "muted" },
          "dropout > 0: not compared (each kernel draws its own dropout mask)",
        );
        if (p.dropout === 0 && why.selected) {
          const r = await runCase(
            "scaledDotProductAttention",
            {
              name: `B${p.batch} H${p.heads} L${p.L} S${p.S} E${p.E} ${p.mask}${p.causal ? " causal" : ""}`,
              make: (d) => makeArgs(p, d),
            },
            p.dtype,
            { device: p.device },
          );
          judged = h(
            "p",
            { id: "sdpa-result", class: `result ${r.status}` },
            h("b", {}, r.status.toUpperCase()),
            ` [${r.case}] ${r.dtype} ran ${r.kernel} (${r.backend ?? "?"}) in ${fmt.ms(r.ms)}; error vs float64 reference ${fmt.err(r.error)}`,
            r.message ? ` — ${r.message}` : "",
          );
        }
        out.replaceChildren(
          h(
            "p",
            {},
            why.selected
              ? ["selected: ", h("code", { id: "sdpa-selected" }, why.selected)]
              : h("span", { class: "no" }, "no kernel can run these inputs"),
          ),
          judged,
          h("h3", {}, "SDPBackend families (sdpaRefusals / canUse*)"),
          table(["family", "", "why not"], fam, { id: "sdpa-families" }),
          h("h3", {}, 'explain("scaledDotProductAttention", …)'),
          explanationTable(why),
        );
      } finally {
        for (const t of owned) if (!t.disposed) t.dispose();
      }
    });
  for (const el of [batch, heads, L, S, E, mask, causal, dropout, dtype, device])
    el.addEventListener("change", check);
  queueMicrotask(check);
  return h(
    "section",
    {},
    h(
      "div",
      { class: "controls" },
      h("label", {}, "batch ", batch),
      h("label", {}, "heads ", heads),
      h("label", {}, "L ", L),
      h("label", {}, "S ", S),
      h("label", {}, "E ", E),
      h("label", {}, "mask ", mask),
      h("label", {}, causal, " causal"),
      h("label", {}, "dropout ", dropout),
      h("label", {}, "dtype ", dtype),
      h("label", {}, "device ", device),
      h("button", { id: "sdpa-run", onclick: check }, "Explain"),
    ),
    out,
  );
}
