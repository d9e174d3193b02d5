/** A tiny DOM helper: h("div", { class: "x", onclick }, "text", child). */
type Attrs = Record<string, unknown>;
type Child = Node | string | number | null | undefined | false | Child[];

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function")
      el.addEventListener(k.slice(2), v as EventListener);
    else if (k === "value" || k === "checked" || k === "selected")
      (el as unknown as Record<string, unknown>)[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children.flat(Number.POSITIVE_INFINITY as 1) as Child[]) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG = "http://www.w3.org/2000/svg";
export function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

export function select(
  options: (string | [value: string, label: string])[],
  attrs: Attrs = {},
): HTMLSelectElement {
  return h(
    "select",
    attrs,
    options.map((o) => {
      const [v, l] = typeof o === "string" ? [o, o] : o;
      return h("option", { value: v }, l);
    }),
  );
}

export const fmt = {
  err: (x: number | undefined) => (x === undefined ? "-" : x === 0 ? "0" : x.toExponential(2)),
  ms: (x: number | undefined) => (x === undefined ? "-" : `${x.toFixed(3)} ms`),
  num: (x: number) =>
    Math.abs(x) >= 1e6 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(3) : String(x),
  json: (x: unknown) => (typeof x === "string" ? x : JSON.stringify(x)),
};

export function table(head: string[], rows: Child[][], attrs: Attrs = {}): HTMLTableElement {
  return h(
    "table",
    attrs,
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((x) => h("th", {}, x)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          {},
          r.map((c) => h("td", {}, c)),
        ),
      ),
    ),
  );
}

/** Runs fn, and shows its error (typed Backplane errors carry a code) in `out`. */
export async function guarded(out: HTMLElement, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (e) {
    const err = e as Error & { code?: string };
    out.replaceChildren(h("div", { class: "error" }, `${err.code ?? err.name}: ${err.message}`));
  }
}
