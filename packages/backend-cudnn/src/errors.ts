/** cuDNN's failures as typed errors: the call, the status by name, and cuDNN's own words. */
import { BackplaneError } from "@backplane/core";
import { statusName } from "./native/api.ts";

export class CudnnError extends BackplaneError {
  constructor(
    /** The call that failed, e.g. "cudnnBackendFinalize(OPERATIONGRAPH)". */
    readonly call: string,
    /** The cudnnStatus_t it returned. */
    readonly status: number,
    /** cudnnGetLastErrorString, when cuDNN said more. */
    readonly detail?: string,
  ) {
    super("CUDNN", `${call} failed: ${statusName(status)}${detail ? `: ${detail}` : ""}`);
  }
}
