/**
 * torch.backends.cpu.get_cpu_capability(): the best vector ISA the processor offers,
 * read from the processor's real features (Linux /proc/cpuinfo), or the WASM level
 * where there is no native access (browsers).
 */

import { warnOnce } from "../util/log.ts";
import { readEnv, runtime } from "./detect.ts";
import { builtinModule, host } from "./host.ts";

export interface CpuCapability {
  /**
   * torch's string: "AVX512", "AVX2", "DEFAULT", "VSX", "Z VECTOR" (ATEN_CPU_CAPABILITY may
   * name "SVE256" too), or a WASM level.
   */
  capability: string;
  arch: string;
  /** The processor's name as the OS reports it ("AMD EPYC 9B45"), empty when unknown. */
  model: string;
  /** Feature flags as the OS reports them (lower case), empty when unknown. */
  features: string[];
  /** x86 vendor, family and model numbers ("AuthenticAMD", 25, 17: Zen 4), where the OS says them. */
  vendor?: string;
  family?: number;
  modelNumber?: number;
  wasmSimd: boolean;
  source: "cpuinfo" | "wasm" | "unknown";
}

const g = host;

function readCpuinfo(): string | undefined {
  try {
    if (g.Deno) return g.Deno.readTextFileSync("/proc/cpuinfo");
    const fs = builtinModule<typeof import("node:fs")>("node:fs");
    return fs?.readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return undefined;
  }
}

let cached: CpuCapability | undefined;

export function cpuCapabilityInfo(): CpuCapability {
  if (cached) return cached;
  const rt = runtime();
  const wasmLevel = rt.wasmSimd ? "WASM_SIMD128" : "WASM";
  if (rt.name === "browser" || rt.name === "unknown") {
    return (cached = frozen({
      capability: wasmLevel,
      arch: "wasm32",
      model: "",
      features: [],
      wasmSimd: rt.wasmSimd,
      source: "wasm",
    }));
  }
  const arch = rt.arch;
  const text = rt.platform === "linux" ? readCpuinfo() : undefined;
  const { features, ...identity } = cpuinfoFields(text ?? "");
  const has = (f: string) => features.includes(f);
  // As torch 2.13's x86 wheels: AVX512, AVX2, else DEFAULT (their "NO AVX" is a build
  // without vector kernels, never a CPU's answer).
  let capability = "DEFAULT";
  if (arch === "x64" || arch === "x86_64") {
    if (has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq"))
      capability = "AVX512";
    else if (has("avx2") && has("fma")) capability = "AVX2";
  } else if (arch === "ppc64" || arch === "ppc64le") capability = "VSX";
  else if (arch === "s390x") capability = "Z VECTOR";
  return (cached = frozen({
    capability: capabilityFromEnv(readEnv("ATEN_CPU_CAPABILITY")) ?? capability,
    arch,
    ...identity,
    features,
    wasmSimd: rt.wasmSimd,
    source: features.length > 0 ? "cpuinfo" : "unknown",
  }));
}

/**
 * The answer every caller shares, frozen: a caller that changed it (its capability, a
 * feature pushed) changed it for the calibration cache's key and every later caller.
 */
function frozen(info: CpuCapability): CpuCapability {
  Object.freeze(info.features);
  return Object.freeze(info);
}

/** ATEN_CPU_CAPABILITY's values, as torch reads them (it does not check the CPU either). */
const ENV_CAPABILITY: Record<string, string> = {
  default: "DEFAULT",
  avx2: "AVX2",
  avx512: "AVX512",
  vsx: "VSX",
  zvector: "Z VECTOR",
  sve256: "SVE256",
};

/** The capability ATEN_CPU_CAPABILITY asks for; an invalid value warns and is ignored, as torch's. */
export function capabilityFromEnv(value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  const named = ENV_CAPABILITY[value];
  if (named === undefined)
    warnOnce(
      `ATEN_CPU_CAPABILITY:${value}`,
      `ignoring invalid value for ATEN_CPU_CAPABILITY: ${value} (use one of ${Object.keys(ENV_CAPABILITY).join(", ")})`,
    );
  return named;
}

/** The fields of a /proc/cpuinfo text, each its first occurrence (x86 and Arm spellings). */
export function cpuinfoFields(
  text: string,
): Pick<CpuCapability, "model" | "features" | "vendor" | "family" | "modelNumber"> {
  const field = (names: string) =>
    new RegExp(`^(?:${names})\\s*:\\s*(.*)$`, "m").exec(text)?.[1]?.trim();
  const num = (v: string | undefined) =>
    v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
  const flags = field("flags|Features");
  return {
    model: field("model name|Model|cpu model") ?? "",
    features: flags ? flags.split(/\s+/) : [],
    vendor: field("vendor_id"),
    family: num(field("cpu family")),
    modelNumber: num(field("model")),
  };
}
