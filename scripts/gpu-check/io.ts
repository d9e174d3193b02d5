/** Arguments, JSON output and exit for the GPU check's scripts, on Deno, Bun and Node. */
import { host, readEnv } from "@backplane/core/cpu";

export interface CheckReport {
  started: string;
  cuda?: { status: unknown; ptx?: unknown; diagnostics?: unknown };
  cudnn?: { status: unknown; diagnostics: unknown };
  steps: Record<string, unknown>;
  allocator?: unknown;
  cudnnPlans?: number;
}

const fs = await import("node:fs");

export function args(): { out: string; only: Set<string>; quick: boolean; recording: boolean } {
  const argv: string[] = host.Deno?.args ?? process.argv.slice(2);
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const only = value("--only")?.split(",") ?? ["conformance", "checks", "timings"];
  return {
    out: value("--out") ?? "artifacts/gpu-check",
    only: new Set(only),
    quick: argv.includes("--quick"),
    recording: argv.includes("--recording"),
  };
}

/** JSON with bigints as strings and non-finite numbers as null. */
export function writeJson(dir: string, name: string, value: unknown): void {
  fs.mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 1);
  fs.writeFileSync(`${dir}/${name}`, `${text}\n`);
}

export function readJson<T>(path: string): T {
  return JSON.parse(fs.readFileSync(path, "utf8")) as T;
}

export function exitWith(code: number): never {
  const d = host.Deno;
  if (d) d.exit(code);
  process.exit(code);
}

/**
 * The cases both sides time (cases.json, read by torch-peers.py too). BACKPLANE_GPU_CASES
 * names a file whose sections replace cases.json's, e.g. cases-cudnn.json (its `sdpa`: the
 * cuDNN and math families only) for a run on cuDNN's kernels.
 */
export interface Cases {
  gemm: { n: number; precisions: string[] };
  sdpa: {
    batch: number;
    heads: number;
    grid: { dtype: string; seq: number[]; headDim: number[]; causal: boolean[] }[];
    families: string[];
  };
  conv2d: {
    batch: number;
    dtypes: string[];
    layers: {
      name: string;
      c: number;
      k: number;
      hw: number;
      r: number;
      stride: number;
      pad: number;
    }[];
  };
  overhead: { calls: number };
  timing: { batchMs: number; batches: number; maxCalls: number };
}

export function cases(): Cases {
  const base = readJson<Cases>(new URL("./cases.json", import.meta.url).pathname);
  const override = readEnv("BACKPLANE_GPU_CASES");
  return override ? { ...base, ...readJson<Partial<Cases>>(override) } : base;
}
