/**
 * OpenBLAS built with DYNAMIC_ARCH picks its kernels ("core") from the CPU id when it is
 * loaded, and an older build does not know newer CPUs: Debian's 0.3.21 runs its Prescott
 * (SSE3) kernels on an Intel Xeon of model 207, a fifth of the speed of its SkylakeX ones,
 * and its Haswell (AVX2) kernels on AMD Zen 5. The core is read only at load time, from
 * OPENBLAS_CORETYPE, so a better core means a second copy of the library loaded with that
 * variable set: this module says when the loaded core is below what the CPU offers, and
 * which cores to try; library.ts loads them and keeps whichever measures fastest.
 */

/** The vector level each OpenBLAS x86-64 core's kernels use. */
const CORE_LEVEL: Record<string, number> = {
  // SSE2/SSE3 cores
  katmai: 1,
  coppermine: 1,
  northwood: 1,
  prescott: 1,
  banias: 1,
  core2: 1,
  penryn: 1,
  dunnington: 1,
  nehalem: 1,
  atom: 1,
  athlon: 1,
  opteron: 1,
  opteron_sse3: 1,
  barcelona: 1,
  bobcat: 1,
  nano: 1,
  // AVX
  sandybridge: 2,
  bulldozer: 2,
  piledriver: 2,
  steamroller: 2,
  excavator: 2,
  // AVX2 + FMA
  haswell: 3,
  zen: 3,
  // AVX-512
  skylakex: 4,
  cooperlake: 4,
  sapphirerapids: 4,
};

const LEVEL_NAME = ["", "SSE", "AVX", "AVX2", "AVX-512"];

/** The CPU's vector level from its feature flags (/proc/cpuinfo), 0 when unknown. */
export function cpuLevel(features: readonly string[]): number {
  const has = (f: string) => features.includes(f);
  if (features.length === 0) return 0;
  if (["avx512f", "avx512bw", "avx512vl", "avx512dq"].every(has)) return 4;
  if (has("avx2") && has("fma")) return 3;
  if (has("avx")) return 2;
  return 1;
}

/** The level of an OpenBLAS core name (openblas_get_corename()), 0 when unknown. */
export function coreLevel(corename: string): number {
  return CORE_LEVEL[corename.trim().toLowerCase()] ?? 0;
}

export interface CoreCheck {
  /** The core OpenBLAS chose. */
  loaded: string;
  /** Whether that core uses less than the CPU offers. */
  belowCpu: boolean;
  /** Cores worth measuring against it (empty when it is fine). */
  candidates: string[];
  /** One line for status(): e.g. "Haswell (AVX2) on a CPU with AVX-512". */
  summary: string;
}

/** Compares the loaded core with the CPU's features. */
export function checkCore(loaded: string, features: readonly string[]): CoreCheck {
  const cpu = cpuLevel(features);
  const core = coreLevel(loaded);
  const belowCpu = cpu > 0 && core > 0 && core < cpu;
  let candidates: string[] = [];
  if (belowCpu) {
    if (cpu >= 4)
      candidates = features.includes("avx512_bf16") ? ["SkylakeX", "Cooperlake"] : ["SkylakeX"];
    else if (cpu === 3) candidates = ["Haswell"];
    else if (cpu === 2) candidates = ["Sandybridge"];
    candidates = candidates.filter((c) => c.toLowerCase() !== loaded.trim().toLowerCase());
  }
  const summary = belowCpu
    ? `${loaded} (${LEVEL_NAME[core]}) on a CPU with ${LEVEL_NAME[cpu]}`
    : `${loaded}${core ? ` (${LEVEL_NAME[core]})` : ""}`;
  return { loaded, belowCpu, candidates, summary };
}
