/**
 * @backplane/testkit: the conformance suite every Backplane backend runs.
 *
 *   const report = await runConformance("my-backend");
 *   report.assertPassed(); // inside any test runner
 */

export { BAD_CALLS, type BadCall } from "./bad-inputs.ts";
export { CASES, type OpCase, sampleCase } from "./cases.ts";
export {
  DEFAULT_TOLERANCES,
  type Judgement,
  maxAbsDiff,
  OP_TOLERANCE_FACTOR,
  orthogonalityError,
  relativeError,
  type Tolerances,
} from "./compare.ts";
export {
  type CaseResult,
  type CaseStatus,
  type ConformanceOptions,
  type ConformanceReport,
  type RunCaseOptions,
  runCase,
  runConformance,
} from "./conformance.ts";
export {
  type DeterminismOptions,
  type DeterminismReport,
  type DeterminismResult,
  runDeterminism,
} from "./determinism.ts";
export { type GrowingRun, withGrowingMemory } from "./growing-memory.ts";
export { registerHostBackedDevice } from "./host-device.ts";
export {
  type AgainstReference,
  againstReference,
  QUANTIZED_DATA,
  type QuantizedOpName,
  type QuantizedReport,
  type QuantizedResult,
  runQuantizedConformance,
  uniformQuantized,
} from "./quantized.ts";
export { boolMask, makeRng, type Rng, randomTensor, spdTensor } from "./random.ts";
export { VIEW_KINDS, type ViewKind, viewOf, viewOnDevice } from "./views.ts";
