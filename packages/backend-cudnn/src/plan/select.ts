/**
 * Which engine configs a plan may use, from cuDNN's own notes on each engine, and how the
 * flags choose among them (as PyTorch's Conv_v8 does): deterministic mode drops engines
 * noted NONDETERMINISTIC; allowTf32 off drops TENSOR_CORE engines for float32; float32
 * never takes an engine that down-converts its inputs. Pure functions: the tests drive them
 * without cuDNN.
 */
import type { DType } from "@backplane/core";
import { NUMERICAL_NOTE } from "../native/api.ts";

export interface SelectionFlags {
  /** cudnn.deterministic or useDeterministicAlgorithms(true). */
  deterministic: boolean;
  /** cudnn.allowTf32. */
  allowTf32: boolean;
  /** cudnn.benchmark: time the candidates instead of taking the heuristics' first. */
  benchmark: boolean;
  /** cudnn.benchmarkLimit: how many candidates benchmark mode times (0: all). */
  benchmarkLimit: number;
}

export interface EngineInfo {
  /** The engine's global index in the graph (CUDNN_ATTR_ENGINE_GLOBAL_INDEX). */
  index: number;
  /** cudnnBackendNumericalNote_t values. */
  numericalNotes: readonly number[];
  /** cudnnBackendBehaviorNote_t values. */
  behaviorNotes: readonly number[];
}

/** Why the flags exclude an engine, or undefined when they allow it. */
export function excludedBy(e: EngineInfo, dtype: DType, f: SelectionFlags): string | undefined {
  const has = (n: number) => e.numericalNotes.includes(n);
  if (f.deterministic && has(NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC))
    return "non-deterministic, and deterministic algorithms are required (cudnn.deterministic or useDeterministicAlgorithms)";
  if (dtype === "float32" && !f.allowTf32 && has(NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
    return "uses TF32 tensor cores, and cudnn.allowTf32 is false";
  if (dtype === "float32" && has(NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
    return "down-converts float32 inputs";
  return undefined;
}

export interface Candidate<C> extends EngineInfo {
  config: C;
  /** Why the config could not be finalized (cuDNN's words), when it could not. */
  configError?: string;
  /** Descriptors the config depends on, destroyed with it. */
  owned?: C[];
}

export interface Screened<C> {
  allowed: Candidate<C>[];
  excluded: { index: number; reason: string }[];
}

/** Splits the heuristics' configs (in their order) into allowed and excluded, with reasons. */
export function screen<C>(
  list: readonly Candidate<C>[],
  dtype: DType,
  f: SelectionFlags,
): Screened<C> {
  const allowed: Candidate<C>[] = [];
  const excluded: { index: number; reason: string }[] = [];
  for (const c of list) {
    const why = excludedBy(c, dtype, f);
    if (why) excluded.push({ index: c.index, reason: why });
    else allowed.push(c);
  }
  return { allowed, excluded };
}

/** How many of the allowed candidates benchmark mode times (torch: benchmark_limit, 0 = all). */
export function benchmarkCount(allowed: number, f: SelectionFlags): number {
  if (!f.benchmark) return Math.min(1, allowed);
  return f.benchmarkLimit > 0 ? Math.min(f.benchmarkLimit, allowed) : allowed;
}

/** The fastest of the timed candidates (the first on a tie, which the heuristics ranked higher). */
export function fastest<T extends { ms: number }>(timed: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const t of timed) if (!best || t.ms < best.ms) best = t;
  return best;
}
