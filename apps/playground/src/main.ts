/**
 * The Backplane playground: loads every backend package it can, then shows six panels.
 * Everything runs in the page (WASM kernels, worker threads on a cross-origin-isolated
 * page, WebGPU where the browser has an adapter).
 */
import "./style.css";
import { runtime } from "@backplane/core";
import { h } from "./dom.ts";
import { loadBackends } from "./load.ts";

const PANELS: [id: string, title: string, load: () => Promise<HTMLElement>][] = [
  ["backends", "Backends", async () => (await import("./panels/backends.ts")).backendsPanel()],
  ["flags", "Flags", async () => (await import("./panels/flags.ts")).flagsPanel()],
  ["ops", "Op runner", async () => (await import("./panels/ops.ts")).opsPanel()],
  ["bench", "Benchmark", async () => (await import("./panels/bench.ts")).benchPanel()],
  ["einsum", "Einsum", async () => (await import("./panels/einsum.ts")).einsumPanel()],
  ["attention", "Attention", async () => (await import("./panels/attention.ts")).attentionPanel()],
];

async function main() {
  const tabs = document.getElementById("tabs")!;
  const panels = document.getElementById("panels")!;
  const loads = await loadBackends();
  const rt = runtime();
  document.getElementById("runtime")!.textContent =
    `${rt.name} ${/(Chrome|Firefox|Version|Edg)\/[\d.]+/.exec(rt.version)?.[0] ?? rt.version} · ${rt.hardwareConcurrency} cores · WASM threads ${rt.wasmThreads ? "on" : "off"} (crossOriginIsolated=${rt.crossOriginIsolated}) · ${loads.filter((l) => l.loaded).length}/${loads.length} backend packages loaded`;
  const built = new Map<string, HTMLElement>();
  const show = async (id: string) => {
    for (const b of tabs.querySelectorAll("button"))
      b.classList.toggle("active", b.dataset.tab === id);
    for (const p of panels.children)
      (p as HTMLElement).hidden = (p as HTMLElement).dataset.panel !== id;
    if (!built.has(id)) {
      const [, title, load] = PANELS.find((p) => p[0] === id)!;
      const wrap = h(
        "div",
        { "data-panel": id, id: `panel-${id}`, class: "panel" },
        h("h2", {}, title),
      );
      built.set(id, wrap);
      panels.append(wrap);
      try {
        wrap.append(await load());
      } catch (e) {
        wrap.append(h("div", { class: "error" }, `this panel failed: ${(e as Error).message}`));
      }
      wrap.dataset.ready = "1";
    }
    history.replaceState(null, "", `#${id}`);
  };
  for (const [id, title] of PANELS)
    tabs.append(h("button", { "data-tab": id, id: `tab-${id}`, onclick: () => show(id) }, title));
  const first = location.hash.slice(1);
  await show(PANELS.some((p) => p[0] === first) ? first : "backends");
  document.body.dataset.ready = "1";
}

main().catch((e) => {
  document.body.append(
    h("div", { class: "error" }, `playground failed to start: ${(e as Error).message}`),
  );
  console.error(e);
});
