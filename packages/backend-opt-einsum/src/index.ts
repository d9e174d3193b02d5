/**
 * @backplane/backend-opt-einsum: torch.backends.opt_einsum with the path finder built in.
 * Importing it registers the "opt-einsum" backend: an einsum kernel for device cpu
 * (priority 60, flag optEinsum.enabled) that contracts along the path of
 * backends.optEinsum.strategy, one batched matmul per pairwise step, and
 * backends.optEinsum.getOptEinsum(), which returns the path API:
 *
 *   const oe = backends.optEinsum.getOptEinsum();
 *   const info = oe.contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2], { strategy: "dp" });
 *   info.path;          // [[1, 2], [0, 1]]
 *   String(info);       // opt_einsum's PathInfo table
 */
import { registerBackend } from "@backplane/core/backend";
import { optEinsumBackend } from "./backend.ts";

registerBackend(optEinsumBackend);

export {
  clearPathCache,
  contract,
  EINSUM_DEVICES,
  OPT_EINSUM_BACKEND,
  type OptEinsumApi,
  optEinsum,
  optEinsumBackend,
  type PathCacheInfo,
  pathCacheInfo,
  VERSION,
} from "./backend.ts";
export {
  type ContractPathOptions,
  contractPath,
  PathInfo,
  type PathStep,
  type ShapeLike,
  type StepKind,
} from "./contract-path.ts";
export { executePath } from "./execute.ts";
export { type SearchOptions, STRATEGIES, type Strategy } from "./paths.ts";
export {
  type RandomEquation,
  type RandomEquationOptions,
  randomEquation,
} from "./random-equation.ts";
