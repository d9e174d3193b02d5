import {
  allFlagKeys,
  backends,
  type FlagSpec,
  flagSpec,
  getFlag,
  onFlagChange,
  setFlag,
} from "@backplane/core";
import { h, select, table } from "../dom.ts";

/** "cudnn.benchmark" = v  ->  { cudnn: { benchmark: v } } */
function nested(key: string, value: unknown): Record<string, unknown> {
  const parts = key.split(".");
  let out: unknown = value;
  for (let i = parts.length - 1; i >= 0; i--) out = { [parts[i]]: out };
  return out as Record<string, unknown>;
}

const numberOf = (raw: string): number => (raw.trim() === "" ? Number.NaN : Number(raw));

function control(key: string, spec: FlagSpec, status: HTMLElement): HTMLElement {
  const set = (v: unknown) => {
    try {
      setFlag(key, v);
      status.textContent = "";
    } catch (e) {
      status.textContent = (e as Error).message;
      refreshControl(key); // the control shows the flag's value, not the refused one
    }
  };
  const v = getFlag(key);
  const id = `flag-${key}`;
  switch (spec.kind) {
    case "bool":
      return h("input", {
        type: "checkbox",
        id,
        "data-flag": key,
        checked: v === true,
        onchange: (e: Event) => set((e.target as HTMLInputElement).checked),
      });
    case "int":
      return h("input", {
        type: "number",
        id,
        "data-flag": key,
        step: 1,
        min: spec.min,
        max: spec.max,
        value: String(v),
        // An empty (or garbled) field is NaN, which setFlag refuses, rather than Number("") = 0.
        onchange: (e: Event) => set(numberOf((e.target as HTMLInputElement).value)),
      });
    case "enum": {
      const el = select([...spec.values], {
        id,
        "data-flag": key,
        onchange: (e: Event) => set((e.target as HTMLSelectElement).value),
      });
      el.value = String(v);
      return el;
    }
    default:
      return h("input", {
        type: "text",
        id,
        "data-flag": key,
        value: String(v),
        onchange: (e: Event) => set((e.target as HTMLInputElement).value),
      });
  }
}

function refreshControl(key: string): void {
  const el = document.getElementById(`flag-${key}`) as HTMLInputElement | null;
  if (!el) return;
  const v = getFlag(key);
  if (el.type === "checkbox") el.checked = v === true;
  else el.value = String(v);
}

export function flagsPanel(): HTMLElement {
  const keys = allFlagKeys().sort();
  const status = h("div", { class: "error", id: "flag-error" });
  const byNs = new Map<string, string[]>();
  for (const k of keys) {
    const ns = k.slice(0, k.indexOf("."));
    byNs.set(ns, [...(byNs.get(ns) ?? []), k]);
  }
  for (const k of keys) onFlagChange(k, () => refreshControl(k));

  // The scoped-override demo: the value inside backends.withFlags and after it.
  const demoKey = select(
    keys.filter((k) => flagSpec(k)?.kind === "bool"),
    { id: "scope-key" },
  );
  if (keys.includes("cudnn.benchmark")) demoKey.value = "cudnn.benchmark";
  const demoOut = h("pre", { id: "scope-out" });
  const demo = async () => {
    const key = demoKey.value;
    const before = getFlag(key);
    const lines = [`before:        ${key} = ${before}`];
    await backends.withFlags(nested(key, !before) as never, async () => {
      lines.push(
        `inside scope:  ${key} = ${getFlag(key)}   (backends.withFlags(${JSON.stringify(nested(key, !before))}, …))`,
      );
      await new Promise((r) => setTimeout(r, 10));
      lines.push(`after an await, still inside: ${key} = ${getFlag(key)}`);
    });
    lines.push(`after scope:   ${key} = ${getFlag(key)}`);
    const scope = backends.flags(nested(key, !before) as never);
    try {
      lines.push(`sync scope (using _ = backends.flags(...)): ${key} = ${getFlag(key)}`);
    } finally {
      scope[Symbol.dispose]();
    }
    lines.push(`after sync scope: ${key} = ${getFlag(key)}`);
    demoOut.textContent = lines.join("\n");
  };

  return h(
    "section",
    {},
    h(
      "div",
      { class: "card" },
      h("h3", {}, "Scoped override"),
      h("label", {}, "flag ", demoKey),
      " ",
      h("button", { id: "scope-run", onclick: demo }, "Run scope demo"),
      demoOut,
    ),
    status,
    h(
      "p",
      { class: "muted" },
      `${keys.length} flags in ${byNs.size} namespaces. Changes apply globally (top-level frame).`,
    ),
    [...byNs].map(([ns, ks]) =>
      h(
        "details",
        { open: true },
        h("summary", {}, ns),
        table(
          ["flag", "value", "default", "torch", "doc"],
          ks.map((k) => {
            const spec = flagSpec(k)!;
            return [
              h("code", {}, k),
              control(k, spec, status),
              h("code", {}, String(spec.default)),
              spec.torch ? h("code", {}, spec.torch) : "",
              h("span", { class: "muted" }, spec.doc ?? (spec.env ? `env ${spec.env}` : "")),
            ];
          }),
          { class: "flags" },
        ),
      ),
    ),
  );
}
