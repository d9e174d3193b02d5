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

/** "key: value" lines of a capability, nested objects one level deep ("adapter.vendor"). */
export function capabilityLines(c: unknown): string[] {
  if (c === undefined || c === null || c === "") return [];
  if (typeof c !== "object") return [String(c)];
  const value = (v: unknown): string =>
    Array.isArray(v)
      ? v.map(value).join(", ")
      : typeof v === "object" && v
        ? fmt.json(v)
        : String(v);
  const out: string[] = [];
  for (const [k, v] of Object.entries(c as Record<string, unknown>)) {
    if (v && typeof v === "object" && !Array.isArray(v))
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>))
        out.push(`${k}.${k2}: ${value(v2)}`);
    else out.push(`${k}: ${value(v)}`);
  }
  return out;
}

/**
 * A software adapter (SwiftShader, llvmpipe): its figures measure a CPU emulating a GPU, so
 * the page says so beside them, in words.
 */
export function softwareAdapter(c: unknown): string | undefined {
  const a = (
    c as { adapter?: { isFallbackAdapter?: boolean; description?: string; vendor?: string } }
  )?.adapter;
  if (!a) return undefined;
  const name = `${a.description ?? ""} ${a.vendor ?? ""}`;
  if (a.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe|softpipe/i.test(name))
    return `software adapter (${(a.description || a.vendor || "fallback").trim()}): WebGPU runs on the CPU here, its speed is not a GPU's`;
  return undefined;
}

function capabilityOf(name: string, ns: NamespaceBase): HTMLElement {
  let c: unknown;
  try {
    c = name === "cpu" ? backends.cpu.getCpuCapability() : ns.capability();
  } catch (e) {
    return h("span", { class: "no" }, `capability() threw: ${(e as Error).message}`);
  }
  const soft = softwareAdapter(c);
  return h(
    "div",
    { class: "cap" },
    soft ? h("div", { class: "warn", "data-software-adapter": "1" }, soft) : "",
    capabilityLines(c).map((line) => h("div", {}, h("code", {}, line))),
  );
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
        capabilityOf(name, ns),
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
