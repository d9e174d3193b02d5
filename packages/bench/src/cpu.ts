/**
 * Which CPU a benchmark ran on, precisely enough to tell the machines of one cloud apart:
 * the core's reading of the processor (model name, vendor, x86 family and model, feature
 * flags from /proc/cpuinfo) with the vector extensions that change which kernels are fast.
 * Every figure is read against it.
 */
import { type CpuCapability, cpuCapabilityInfo, runtime } from "@backplane/core";
import { builtinModule } from "@backplane/core/cpu";

export interface CpuIdentity {
  /** The model name the OS reports ("AMD EPYC", "Intel(R) Xeon(R) Platinum 8488C"...). */
  model: string;
  vendor?: string;
  /** x86 family and model numbers (25 / 17: Zen 4), where the OS says them. */
  family?: number;
  modelNumber?: number;
  /** The vector extensions present, among those kernels care about. */
  isa: string[];
  cores: number;
}

/** The feature flags worth naming, with their usual names. */
const ISA_FLAGS: [flag: string, name: string][] = [
  ["avx2", "AVX2"],
  ["fma", "FMA"],
  ["avx512f", "AVX-512"],
  ["avx512_vnni", "VNNI"],
  ["avx512_bf16", "BF16"],
  ["amx_tile", "AMX"],
  ["asimd", "NEON"],
  ["sve", "SVE"],
];

/** This machine's CPU, or (tests) the one these cpuinfo fields describe. */
export function cpuIdentity(
  info?: Pick<CpuCapability, "model" | "features" | "vendor" | "family" | "modelNumber">,
  cores = runtime().hardwareConcurrency,
): CpuIdentity {
  // Off Linux the core has no model name: the OS's, for this machine.
  const os = info ? undefined : builtinModule<typeof import("node:os")>("node:os");
  info ??= cpuCapabilityInfo();
  const flags = new Set(info.features);
  return {
    model: info.model || (os?.cpus?.()[0]?.model ?? "unknown CPU"),
    vendor: info.vendor,
    family: info.family,
    modelNumber: info.modelNumber,
    isa: ISA_FLAGS.filter(([f]) => flags.has(f)).map(([, n]) => n),
    cores,
  };
}

/** "AMD EPYC (family 25 model 17; AVX2 FMA AVX-512 VNNI BF16), 2 cores". */
export function cpuText(c: CpuIdentity = cpuIdentity()): string {
  const fm = c.family !== undefined ? `family ${c.family} model ${c.modelNumber ?? "?"}` : "";
  const detail = [fm, c.isa.join(" ")].filter(Boolean).join("; ");
  return `${c.model}${detail ? ` (${detail})` : ""}, ${c.cores} cores`;
}
