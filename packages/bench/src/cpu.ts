/**
 * Which CPU a benchmark ran on, precisely enough to tell the machines of one cloud apart:
 * vendor, family and model (from /proc/cpuinfo on Linux; the model name elsewhere), and the
 * vector extensions that change which kernels are fast. Every figure is read against it.
 */
import { runtime } from "@backplane/core";
import { builtinModule } from "@backplane/core/backend";

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

/** The flags of /proc/cpuinfo worth naming, with their usual names. */
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

/** Parses /proc/cpuinfo's first processor block. */
export function parseCpuinfo(text: string, cores: number): CpuIdentity {
  const first = text.split(/\n\s*\n/)[0] ?? "";
  const field = (name: string) =>
    new RegExp(`^${name}\\s*:\\s*(.*)$`, "m").exec(first)?.[1]?.trim();
  const flags = new Set((field("flags") ?? field("Features") ?? "").split(/\s+/));
  const num = (s: string | undefined) =>
    s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined;
  return {
    model: field("model name") ?? field("Hardware") ?? "unknown CPU",
    vendor: field("vendor_id"),
    family: num(field("cpu family")),
    modelNumber: num(field("model")),
    isa: ISA_FLAGS.filter(([f]) => flags.has(f)).map(([, n]) => n),
    cores,
  };
}

export function cpuIdentity(): CpuIdentity {
  const cores = runtime().hardwareConcurrency;
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  try {
    const text = fs?.readFileSync("/proc/cpuinfo", "utf8");
    if (text) return parseCpuinfo(text, cores);
  } catch {
    // not Linux: the model name below
  }
  const os = builtinModule<typeof import("node:os")>("node:os");
  return { model: os?.cpus?.()[0]?.model ?? "unknown CPU", isa: [], cores };
}

/** "AMD EPYC (family 25 model 17; AVX2 FMA AVX-512 VNNI BF16), 2 cores". */
export function cpuText(c: CpuIdentity = cpuIdentity()): string {
  const fm = c.family !== undefined ? `family ${c.family} model ${c.modelNumber ?? "?"}` : "";
  const detail = [fm, c.isa.join(" ")].filter(Boolean).join("; ");
  return `${c.model}${detail ? ` (${detail})` : ""}, ${c.cores} cores`;
}
