import {
  ArgumentError,
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
import { deviceRefusal, explanationTable } from "./ops.ts";

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

/**
 * The panel runs on the page's own thread (the float64 reference included), so sizes are
 * capped at about two seconds of work (measured in headless Chromium): B·H·L·S·E = 2^24,
 * 2^22 for the 16-bit dtypes (no SIMD kernel takes them; the math path is ~4x slower).
 */
/** Each SDPBackend family: accepts, or refuses with its reasons (sdpaRefusals). */
function familyRows(params: SDPAParams): (HTMLElement | string)[][] {
  return FAMILIES.map((f) => {
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
}

/**
 * The selected kernel run against the float64 reference (not with dropout: kernels draw
 * their own masks), as a line to show.
 */
async function judge(p: AttentionInputs, selected: boolean): Promise<HTMLElement> {
  if (p.dropout !== 0 || !selected)
    return h(
      "p",
      { class: "muted" },
      p.dropout !== 0
        ? "dropout > 0: not compared (each kernel draws its own dropout mask)"
        : "no kernel ran",
    );
  const r = await runCase(
    "scaledDotProductAttention",
    {
      name: `B${p.batch} H${p.heads} L${p.L} S${p.S} E${p.E} ${p.mask}${p.causal ? " causal" : ""}`,
      make: (d) => makeArgs(p, d),
    },
    p.dtype,
    { device: p.device },
  );
  return h(
    "p",
    { id: "sdpa-result", class: `result ${r.status}` },
    h("b", {}, r.status.toUpperCase()),
    ` [${r.case}] ${r.dtype} ran ${r.kernel} (${r.backend ?? "?"}) in ${fmt.ms(r.ms)}; error vs float64 reference ${fmt.err(r.error)}`,
    r.message ? ` — ${r.message}` : "",
  );
}

export function maxAttentionWork(dtype: DType): number {
  return dtype === "float16" || dtype === "bfloat16" ? 2 ** 22 : 2 ** 24;
}

/** A size field: a whole number >= 0 (an empty or garbled field is an error, not a 0). */
export function readCount(el: HTMLInputElement, name: string): number {
  const raw = el.value.trim();
  const n = Number(raw);
  if (raw === "" || !Number.isInteger(n) || n < 0)
    throw new ArgumentError(
      `${name} must be a whole number >= 0, got ${el.validity?.badInput ? "text that is not a number" : JSON.stringify(el.value)}`,
    );
  return n;
}

/** The dropout field: a number (its range [0, 1] is checked by scaledDotProductAttention). */
function readDropout(el: HTMLInputElement): number {
  const raw = el.value.trim();
  if (raw === "" || !Number.isFinite(Number(raw)))
    throw new ArgumentError(`dropout must be a number in [0, 1], got ${JSON.stringify(el.value)}`);
  return Number(raw);
}

/** Refuses sizes too large to run on the page's thread, naming the product. */
export function checkWork(p: AttentionInputs): void {
  const work = p.batch * p.heads * p.L * Math.max(p.S, 1) * Math.max(p.E, 1);
  const max = maxAttentionWork(p.dtype);
  if (work > max)
    throw new ArgumentError(
      `B·H·L·S·E = ${work} is more than this page runs at once for ${p.dtype} (${max}): the float64 reference would freeze the tab; make a size smaller`,
    );
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
  const inputs = (): AttentionInputs => {
    const p: AttentionInputs = {
      batch: readCount(batch, "batch"),
      heads: readCount(heads, "heads"),
      L: readCount(L, "L"),
      S: readCount(S, "S"),
      E: readCount(E, "E"),
      mask: mask.value as AttentionInputs["mask"],
      causal: causal.checked,
      dropout: readDropout(dropout),
      dtype: dtype.value as DType,
      device: device.value,
    };
    checkWork(p);
    return p;
  };
  // Each change starts a check; only the latest one may draw (a slower earlier one is stale).
  let generation = 0;
  const check = () =>
    guarded(out, async () => {
      const mine = ++generation;
      const p = inputs();
      const refusal = deviceRefusal(p.device);
      if (refusal) {
        out.replaceChildren(h("p", { class: "no", id: "sdpa-device-refused" }, refusal));
        return;
      }
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
        const fam = familyRows(new SDPAParams(q, k, v, m, p.dropout, p.causal));
        const judged = await judge(p, why.selected !== undefined);
        if (mine !== generation) return;
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
