/**
 * The one loader of WASM kernel modules. A backend names each module by a literal
 * `new URL("../wasm/x.wasm", import.meta.url)` pair (so bundlers emit the files); the
 * loader picks the threads or plain build for the CPU memory, claims the module's static
 * data, instantiates it on the CPU memory and registers it for parallel tasks. Servers
 * read and compile synchronously, so kernels are ready at import; browsers fetch.
 */
import { DeviceError } from "../errors.ts";
import { readEnv, runtime } from "../runtime/detect.ts";
import { builtinModule, host } from "../runtime/host.ts";
import { cpuMemory, wasmKernelImports } from "./memory.ts";
import { registerWasmModule } from "./modules.ts";
import { claimStaticMemory, dataExtent } from "./static.ts";

/** One WASM kernel module of a package: its id and its builds. */
export interface WasmModuleFiles {
  /** "<package without scope>/<module>", e.g. "backend-nnpack/conv": the file is wasm/<module>.wasm. */
  id: string;
  /** The shared-memory (threads) build. */
  threads: URL;
  /** The plain-memory build, for pages that are not cross-origin isolated. */
  plain: URL;
  /**
   * Builds with relaxed SIMD (f32x4.relaxed_madd: one fused multiply-add where the engine
   * emits FMA), loaded where the runtime validates relaxed SIMD; the others stay the fallback.
   */
  relaxed?: { threads: URL; plain: URL };
}

// A module whose one function is f32x4.relaxed_madd of three constants (validates only
// where relaxed SIMD is enabled: Bun, Deno, Chrome 114+, Node 20 with a flag).
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0, 253, 12, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 253, 133, 2, 11,
]);

let relaxedOk: boolean | undefined;
/** Whether this runtime runs relaxed SIMD (and BACKPLANE_WASM_RELAXED_SIMD is not 0). */
export function relaxedSimdEnabled(): boolean {
  if (relaxedOk === undefined) {
    const v = readEnv("BACKPLANE_WASM_RELAXED_SIMD");
    const off = v === "0" || v === "false";
    let valid = false;
    try {
      valid = WebAssembly.validate(RELAXED_PROBE);
    } catch {
      valid = false;
    }
    relaxedOk = valid && !off;
  }
  return relaxedOk;
}

type WasmResolver = (file: string, id: string) => URL | string | undefined;
const overrides: WasmResolver[] = [];

/**
 * Serves the .wasm files from elsewhere (a CDN, a custom path): `resolve` gets the file's
 * name as the package ships it in its wasm/ folder ("conv.wasm", "conv.nothreads.wasm";
 * a bundler may have renamed or inlined the default URL) and the module id
 * ("backend-nnpack/conv"), and returns its URL, or undefined to keep the default.
 * `null` removes the override.
 */
export function setWasmLocation(resolve: WasmResolver | null): void {
  overrides.length = 0;
  if (resolve) overrides.push(resolve);
}

/**
 * The build this CPU memory needs (threads when it is shared; relaxed SIMD where it
 * validates and the module has such a build), after any override.
 */
export function wasmModuleUrl(files: WasmModuleFiles): URL {
  const shared = cpuMemory().shared;
  const relaxed = files.relaxed !== undefined && relaxedSimdEnabled();
  const builds = relaxed ? (files.relaxed as { threads: URL; plain: URL }) : files;
  const url = shared ? builds.threads : builds.plain;
  const name = `${files.id.slice(files.id.indexOf("/") + 1)}${relaxed ? ".relaxed" : ""}${shared ? "" : ".nothreads"}.wasm`;
  for (const o of overrides) {
    const r = o(name, files.id);
    if (r !== undefined) return new URL(r, url);
  }
  return url;
}

function readSync(url: URL): Uint8Array | undefined {
  if (url.protocol !== "file:") return undefined;
  if (host.Deno) return host.Deno.readFileSync(url);
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  const nodeUrl = builtinModule<typeof import("node:url")>("node:url");
  return fs && nodeUrl ? fs.readFileSync(nodeUrl.fileURLToPath(url)) : undefined;
}

function register<T>(id: string, module: WebAssembly.Module, instance: WebAssembly.Instance): T {
  registerWasmModule(id, module, instance);
  return instance.exports as T;
}

function claim(id: string, bytes: Uint8Array): void {
  const extent = dataExtent(bytes);
  if (extent) claimStaticMemory(id, extent[0], extent[1]);
}

/** Instantiates the module synchronously where the runtime can read files, else undefined. */
export function loadWasmModuleSync<T>(files: WasmModuleFiles): T | undefined {
  if (runtime().name === "browser") return undefined;
  const bytes = readSync(wasmModuleUrl(files));
  if (!bytes) return undefined;
  claim(files.id, bytes);
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const instance = new WebAssembly.Instance(module, wasmKernelImports(files.id));
  return register<T>(files.id, module, instance);
}

/** Instantiates the module (fetching it where files cannot be read synchronously). */
export async function loadWasmModule<T>(files: WasmModuleFiles): Promise<T> {
  const sync = loadWasmModuleSync<T>(files);
  if (sync) return sync;
  const url = wasmModuleUrl(files);
  const response = await fetch(url);
  if (!response.ok)
    throw new DeviceError(`${files.id}: could not fetch ${url.href}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  claim(files.id, bytes);
  const { module, instance } = await WebAssembly.instantiate(bytes, wasmKernelImports(files.id));
  return register<T>(files.id, module, instance);
}
