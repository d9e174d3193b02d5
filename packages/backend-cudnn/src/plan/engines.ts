/**
 * From a finalized operation graph to execution plans: the heuristics' engine configs (each
 * with its engine's numerical and behaviour notes), and an execution plan per config.
 */
import { Descriptor } from "../graph/descriptor.ts";
import type { CudnnSymbols } from "../layer.ts";
import { ATTR, HEUR } from "../native/api.ts";
import type { Candidate, EngineInfo } from "./select.ts";

const MAX_CONFIGS = 32;
const MAX_NOTES = 16;

/** An engine's global index and notes. */
function engineNotes(engine: Descriptor): EngineInfo {
  return {
    index: engine.getInt64("GLOBAL_INDEX", ATTR.CUDNN_ATTR_ENGINE_GLOBAL_INDEX),
    numericalNotes: engine.getEnums(
      "NUMERICAL_NOTE",
      ATTR.CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
      "CUDNN_TYPE_NUMERICAL_NOTE",
      MAX_NOTES,
    ),
    behaviorNotes: engine.getEnums(
      "BEHAVIOR_NOTE",
      ATTR.CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
      "CUDNN_TYPE_BEHAVIOR_NOTE",
      MAX_NOTES,
    ),
  };
}

/** The notes of the engine a (heuristics') config holds. */
function notesOf(lib: CudnnSymbols, config: Descriptor): EngineInfo {
  const engine = Descriptor.create(lib, "CUDNN_BACKEND_ENGINE_DESCRIPTOR");
  try {
    config.getDescriptors("ENGINE", ATTR.CUDNN_ATTR_ENGINECFG_ENGINE, [engine]);
    return engineNotes(engine);
  } finally {
    engine.destroy();
  }
}

/**
 * The engine configs for `graph`, best first, each with its engine's notes: what cuDNN's
 * heuristics propose (mode A, then the fallback list, as the frontend does), or, when they
 * propose nothing, every engine of the graph that finalizes, in global-index order. The
 * caller destroys the configs.
 */
export function engineConfigs(
  lib: CudnnSymbols,
  graph: Descriptor,
  heuristicErrors: string[] = [],
): Candidate<Descriptor>[] {
  const proposed = heuristicConfigs(lib, graph, heuristicErrors);
  return proposed.length > 0 ? proposed : enumeratedConfigs(lib, graph);
}

/**
 * One candidate per engine of the graph that finalizes for it, with the engine's notes. Its
 * config is finalized too where cuDNN can (it needs the device's properties); where it
 * cannot, `configError` keeps cuDNN's reason and executionPlan() refuses with it.
 * Only with a device: without one, cuDNN 9.24 crashes the process finalizing engine 5 of a
 * float32 depthwise graph (found on this project's GPU-less CI machine).
 */
export function enumeratedConfigs(lib: CudnnSymbols, graph: Descriptor): Candidate<Descriptor>[] {
  const count = graph.getInt64(
    "ENGINE_GLOBAL_COUNT",
    ATTR.CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
  );
  const out: Candidate<Descriptor>[] = [];
  for (let index = 0; index < count; index++) {
    const engine = Descriptor.create(lib, "CUDNN_BACKEND_ENGINE_DESCRIPTOR");
    try {
      engine
        .set("OPERATION_GRAPH", ATTR.CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {
          type: "CUDNN_TYPE_BACKEND_DESCRIPTOR",
          values: [graph],
        })
        .set("GLOBAL_INDEX", ATTR.CUDNN_ATTR_ENGINE_GLOBAL_INDEX, {
          type: "CUDNN_TYPE_INT64",
          values: [index],
        })
        .finalize();
    } catch {
      // This engine does not take the graph.
      engine.destroy();
      continue;
    }
    const config = Descriptor.create(lib, "CUDNN_BACKEND_ENGINECFG_DESCRIPTOR");
    let configError: string | undefined;
    try {
      config
        .set("ENGINE", ATTR.CUDNN_ATTR_ENGINECFG_ENGINE, {
          type: "CUDNN_TYPE_BACKEND_DESCRIPTOR",
          values: [engine],
        })
        .finalize();
    } catch (e) {
      configError = (e as Error).message;
    }
    out.push({ ...engineNotes(engine), config, configError, owned: [engine] });
  }
  return out;
}

/**
 * The configs cuDNN's heuristics propose (none where no GPU can be queried); why a mode
 * answered nothing goes to `errors` (for the message when no plan can be made).
 */
export function heuristicConfigs(
  lib: CudnnSymbols,
  graph: Descriptor,
  errors: string[] = [],
): Candidate<Descriptor>[] {
  const out: Candidate<Descriptor>[] = [];
  const seen = new Set<number>();
  for (const mode of [HEUR.CUDNN_HEUR_MODE_A, HEUR.CUDNN_HEUR_MODE_FALLBACK]) {
    const heur = Descriptor.create(lib, "CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR");
    const configs = Array.from({ length: MAX_CONFIGS }, () =>
      Descriptor.create(lib, "CUDNN_BACKEND_ENGINECFG_DESCRIPTOR"),
    );
    let n = 0;
    try {
      heur
        .set("OPERATION_GRAPH", ATTR.CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, {
          type: "CUDNN_TYPE_BACKEND_DESCRIPTOR",
          values: [graph],
        })
        .set("MODE", ATTR.CUDNN_ATTR_ENGINEHEUR_MODE, {
          type: "CUDNN_TYPE_HEUR_MODE",
          values: [mode],
        })
        .finalize();
      n = heur.getDescriptors("RESULTS", ATTR.CUDNN_ATTR_ENGINEHEUR_RESULTS, configs);
    } catch (e) {
      // A mode that cannot answer for this graph adds nothing; the other may.
      n = 0;
      errors.push(
        `${mode === HEUR.CUDNN_HEUR_MODE_A ? "mode A" : "fallback"}: ${(e as Error).message}`,
      );
    } finally {
      heur.destroy();
    }
    for (const [i, config] of configs.entries()) {
      if (i >= n) {
        config.destroy();
        continue;
      }
      const info = notesOf(lib, config);
      if (seen.has(info.index)) config.destroy();
      else {
        seen.add(info.index);
        out.push({ ...info, config });
      }
    }
  }
  return out;
}

/** Destroys a candidate's config and the descriptors it depends on. */
export function destroyCandidate(c: Candidate<Descriptor>): void {
  for (const d of [c.config, ...(c.owned ?? [])]) d.destroy();
}

export interface ExecutionPlan {
  readonly descriptor: Descriptor;
  readonly workspaceBytes: number;
  readonly engine: number;
  /**
   * The variant pack of the plan's last execution, kept so that a call with the same
   * addresses (a loop whose inputs stay and whose outputs come back from the caching
   * allocator at the same place) skips building one: six cuDNN calls.
   */
  lastPack?: {
    readonly descriptor: Descriptor;
    readonly uids: readonly number[];
    /** The data pointers in uid order, then the workspace. */
    readonly addresses: BigUint64Array;
  };
}

/** Destroys a plan's descriptor and its kept variant pack. */
export function releasePlan(plan: ExecutionPlan): void {
  plan.lastPack?.descriptor.destroy();
  plan.lastPack = undefined;
  plan.descriptor.destroy();
}

/** The finalized execution plan of one engine config (throws cuDNN's reason when it refuses). */
export function executionPlan(
  lib: CudnnSymbols,
  c: Candidate<Descriptor>,
  handle: bigint,
): ExecutionPlan {
  if (c.configError) throw new Error(c.configError);
  const plan = Descriptor.create(lib, "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR");
  try {
    // The handle attribute is deprecated in cuDNN 9 but still selects the device's properties.
    plan.set("HANDLE", ATTR.CUDNN_ATTR_EXECUTION_PLAN_HANDLE, {
      type: "CUDNN_TYPE_HANDLE",
      values: [handle],
    });
    plan
      .set("ENGINE_CONFIG", ATTR.CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, {
        type: "CUDNN_TYPE_BACKEND_DESCRIPTOR",
        values: [c.config],
      })
      .finalize();
    const workspaceBytes = plan.getInt64(
      "WORKSPACE_SIZE",
      ATTR.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
    );
    return { descriptor: plan, workspaceBytes, engine: c.index };
  } catch (e) {
    plan.destroy();
    throw e;
  }
}
