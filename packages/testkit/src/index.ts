/**
 * @backplane/testkit: the conformance suite every Backplane backend runs.
 *
 *   const report = await runConformance("my-backend");
 *   report.assertPassed(); // inside any test runner
 */
export { runConformance, type ConformanceOptions, type ConformanceReport, type CaseResult, type CaseStatus } from "./conformance.ts";
export { CASES, sampleCase, type OpCase } from "./cases.ts";
export { BAD_CALLS, type BadCall } from "./bad-inputs.ts";
export { DEFAULT_TOLERANCES, OP_TOLERANCE_FACTOR, relativeError, orthogonalityError, type Tolerances, type Judgement } from "./compare.ts";
export { makeRng, randomTensor, spdTensor, boolMask, type Rng } from "./random.ts";
export { registerHostBackedDevice } from "./host-device.ts";
