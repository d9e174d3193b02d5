/** The global switches: deterministic algorithms and float32 matmul precision (torch.*). */

import { ArgumentError, FlagError } from "../errors.ts";
import { addChangeCheck, getFlag, onFlagChange, setFlag } from "../flags/state.ts";
import { checkBool, checkOptions } from "../ops/validate.ts";
import type { MatmulPrecision } from "../registry/kernels.ts";
import { show } from "../util/format.ts";

/**
 * Deterministic mode: nondeterministic kernels are skipped for deterministic ones; when
 * none is left the op throws NondeterministicError (with warnOnly: runs and warns once).
 */
export function useDeterministicAlgorithms(mode: boolean, opts: { warnOnly?: boolean } = {}): void {
  if (typeof mode !== "boolean")
    throw new ArgumentError(
      `useDeterministicAlgorithms: mode must be a boolean, got ${show(mode)}`,
    );
  const fn = "useDeterministicAlgorithms";
  const warnOnly = checkBool(fn, "warnOnly", checkOptions(fn, opts, ["warnOnly"]).warnOnly, false);
  setFlag("core.deterministic", mode);
  // As torch stores it: (false, { warnOnly: true }) reports warn-only on, and changes nothing.
  setFlag("core.deterministicWarnOnly", warnOnly);
}

export const areDeterministicAlgorithmsEnabled = (): boolean =>
  getFlag("core.deterministic") as boolean;
export const isDeterministicAlgorithmsWarnOnlyEnabled = (): boolean =>
  getFlag("core.deterministicWarnOnly") as boolean;

/** "highest": full float32; "high": TF32 (or similar) allowed; "medium": bf16-based splits allowed. */
export function setFloat32MatmulPrecision(precision: MatmulPrecision): void {
  setFlag("core.float32MatmulPrecision", precision);
}
export const getFloat32MatmulPrecision = (): MatmulPrecision =>
  getFlag("core.float32MatmulPrecision") as MatmulPrecision;

// As in torch, cuda.matmul.allowTf32 and the float32 precision are one setting seen twice.
onFlagChange("core.float32MatmulPrecision", (p) => {
  if (getFlag("cuda.matmul.allowTf32") !== (p !== "highest"))
    setFlag("cuda.matmul.allowTf32", p !== "highest");
});
onFlagChange("cuda.matmul.allowTf32", (on) => {
  const cur = getFlag("core.float32MatmulPrecision");
  if (on && cur === "highest") setFlag("core.float32MatmulPrecision", "high");
  if (!on && cur !== "highest") setFlag("core.float32MatmulPrecision", "highest");
});
// A scope that sets both halves must not contradict itself: the hooks would pick one.
addChangeCheck((changes) => {
  const p = changes["core.float32MatmulPrecision"];
  const on = changes["cuda.matmul.allowTf32"];
  if (p === undefined || on === undefined || on === (p !== "highest")) return;
  throw new FlagError(
    `core.float32MatmulPrecision ${show(p)} and cuda.matmul.allowTf32 ${show(on)} contradict each other: ` +
      'allowTf32 is true exactly when the precision is not "highest" (as in torch); set only one of them',
  );
});
