import {
  backends,
  cpuCapabilityInfo,
  type MemoryStats,
  memoryStats,
  type NamespaceBase,
  runtime,
  version,
} from "@backplane/core";
import { fmt, h, table } from "../dom.ts";
import { loads } from "../load.ts";

function capabilityOf(name: string, ns: NamespaceBase): string {
  try {
    const c = name === "cpu" ? backends.cpu.getCpuCapability() : ns.capability();
    return c === undefined ? "" : fmt.json(c);
  } catch (e) {
    return `capability() threw: ${(e as Error).message}`;
  }
}

export function backendsPanel(): HTMLElement {
  const body = h("div");
  const render = () => {
    const rt = runtime();
    const rows = backends.names().map((name) => {
      const ns = backends.namespace(name);
      const st = ns.status();
      const state = st.available ? "available" : st.built ? "built, not available" : "not built";
      return [
        h("code", {}, name),
        h("span", { class: st.built ? "yes" : "no" }, st.built ? "yes" : "no"),
        h("span", { class: st.available ? "yes" : "no" }, st.available ? "yes" : "no"),
        st.backend ? `${st.backend}${st.version ? ` ${st.version}` : ""}` : "",
        h("span", { class: "reason" }, st.reason ?? (st.available ? "" : state)),
        h("code", { class: "cap" }, capabilityOf(name, ns)),
      ];
    });
    const mem = memoryStats();
    body.replaceChildren(
      h(
        "p",
        {},
        `Backplane ${version} on ${rt.name} ${rt.version} (${rt.platform}/${rt.arch}, ${rt.hardwareConcurrency} cores) — `,
        `WASM simd=${rt.wasmSimd} threads=${rt.wasmThreads} crossOriginIsolated=${rt.crossOriginIsolated}; CPU ${cpuCapabilityInfo().capability}`,
      ),
      h("h3", {}, "Packages"),
      table(
        ["package", "loaded"],
        loads.map((l) => [
          h("code", {}, l.packageName),
          l.loaded
            ? h("span", { class: "yes" }, "loaded")
            : h("span", { class: "no" }, `not available: ${l.reason}`),
        ]),
        { id: "packages" },
      ),
      h("h3", {}, `Namespaces (${rows.length})`),
      table(["namespace", "built", "available", "backend", "reason", "capability"], rows, {
        id: "namespaces",
      }),
      h("h3", {}, "Device memory"),
      table(
        ["device", "allocated", "peak", "live buffers"],
        Object.entries(mem).map(([d, m]: [string, MemoryStats]) => [
          d,
          String(m.allocatedBytes),
          String(m.peakBytes),
          String(m.liveBuffers),
        ]),
      ),
    );
  };
  render();
  return h(
    "section",
    {},
    h("button", { onclick: render, id: "refresh-backends" }, "Refresh"),
    body,
  );
}
