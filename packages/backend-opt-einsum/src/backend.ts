/**
 * The backend: the "opt-einsum" einsum kernel (paths cached per equation, shapes and
 * strategy), backends.optEinsum's isAvailable() and getOptEinsum().
 */
import { ArgumentError, getFlag, Tensor } from "@backplane/core";
import {
  type BackendDefinition,
  type OptEinsumApi as CoreOptEinsumApi,
  defineBackend,
  type EinsumParams,
  ops,
} from "@backplane/core/backend";
import {
  type ContractPathOptions,
  checkStrategy,
  contractPath,
  type PathInfo,
  searchPath,
} from "./contract-path.ts";
import { executePath } from "./execute.ts";
import { clearPathCache, EINSUM_DEVICES, einsumKernel, pathCacheInfo } from "./kernels/einsum.ts";
import {
  checkKnownOptions,
  checkSearchOptions,
  SEARCH_OPTIONS,
  STRATEGIES,
  type Strategy,
  show,
} from "./paths.ts";
import { randomEquation } from "./random-equation.ts";

export {
  cachedPath,
  clearPathCache,
  EINSUM_DEVICES,
  type PathCacheInfo,
  pathCacheInfo,
} from "./kernels/einsum.ts";

export const OPT_EINSUM_BACKEND = "opt-einsum";
export const VERSION = "0.1.0";

// ---- the API getOptEinsum() returns ----

/**
 * opt_einsum's contract: evaluates the einsum along the path a strategy finds (or an
 * explicit path), whatever backends.optEinsum says; the last argument may be options.
 */
export function contract(
  equation: string,
  ...args: (
    | Tensor
    | Pick<ContractPathOptions, "strategy" | "seed" | "repeats" | "outer" | "budgetMs">
  )[]
): Tensor {
  const last: unknown = args[args.length - 1];
  // Only a plain object is options (null is not: it would crash on opts.strategy).
  const hasOpts =
    last !== null && typeof last === "object" && !(last instanceof Tensor) && !Array.isArray(last);
  const opts = (hasOpts ? last : {}) as ContractPathOptions;
  checkSearchOptions(opts, "contract");
  checkKnownOptions(opts, "contract", [...SEARCH_OPTIONS, "strategy"]);
  const tensors = (hasOpts ? args.slice(0, -1) : args) as unknown[];
  tensors.forEach((t, i) => {
    if (!(t instanceof Tensor)) {
      throw new ArgumentError(
        `contract: operand ${i} must be a Tensor (options go last, as an object), got ${show(t)}`,
      );
    }
  });
  const p = ops.einsum.prepare(equation, ...(tensors as Tensor[])) as EinsumParams;
  const strategy = opts.strategy ?? (getFlag("optEinsum.strategy") as Strategy);
  let path: number[][];
  if (Array.isArray(strategy)) {
    path = contractPath(equation, ...(tensors as Tensor[]).map((t) => t.shape), { strategy }).path;
  } else {
    checkStrategy(strategy);
    path = searchPath(p, strategy, opts).path;
  }
  return executePath(p, path);
}

/** What getOptEinsum() returns: the core's contract, so backends.optEinsum is typed with it. */
export type OptEinsumApi = CoreOptEinsumApi;

export const optEinsum: OptEinsumApi = Object.freeze({
  contractPath,
  contract,
  randomEquation,
  strategies: STRATEGIES,
  pathCacheInfo,
  clearPathCache,
  version: VERSION,
});

export const optEinsumBackend: BackendDefinition = defineBackend({
  name: OPT_EINSUM_BACKEND,
  namespaces: ["optEinsum"],
  devices: [...EINSUM_DEVICES],
  packageName: "@backplane/backend-opt-einsum",
  version: () => VERSION,
  isAvailable: () => ({ available: true }),
  capability: () => ({ strategies: [...STRATEGIES], pathCache: pathCacheInfo() }),
  kernels: EINSUM_DEVICES.map(einsumKernel),
  api: { optEinsum: { getOptEinsum: () => optEinsum } },
});

export type { PathInfo };
