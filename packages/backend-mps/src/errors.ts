/**
 * The helper's failures as typed errors: the call, the status by name, and the helper's
 * own message (bp_mps_last_error). Out-of-memory and a freed buffer have their own classes
 * because callers handle them (free something and retry; a use-after-free bug).
 */
import { BackplaneError } from "@backplane/core";
import { STATUS, statusName } from "./native/abi.ts";

export class MpsError extends BackplaneError {
  constructor(
    /** The helper function that failed, e.g. "bp_mps_conv2d". */
    readonly call: string,
    /** Its BP_MPS_* status. */
    readonly status: number,
    /** What the helper said. */
    readonly detail: string,
    code = "E_MPS",
  ) {
    super(code, `${call} failed (${statusName(status)}): ${detail}`);
  }
}

/** The device (or the cap set by setPerProcessMemoryFraction) has no room for a buffer. */
export class MpsOutOfMemoryError extends MpsError {
  constructor(call: string, status: number, detail: string) {
    super(call, status, detail, "E_MPS_OUT_OF_MEMORY");
  }
}

/** A buffer handle that was freed reached the helper. */
export class MpsFreedBufferError extends MpsError {
  constructor(call: string, status: number, detail: string) {
    super(call, status, detail, "E_MPS_FREED_BUFFER");
  }
}

/** The typed error for a non-OK status. */
export function mpsError(call: string, status: number, detail: string): MpsError {
  if (status === STATUS.E_OUT_OF_MEMORY) return new MpsOutOfMemoryError(call, status, detail);
  if (status === STATUS.E_FREED_BUFFER) return new MpsFreedBufferError(call, status, detail);
  return new MpsError(call, status, detail);
}
