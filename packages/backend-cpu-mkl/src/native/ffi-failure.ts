/** Why a backend of this package cannot reach native code, as the error its init() throws. */
import { NotInstalledError } from "@backplane/core";
import type { FfiInit } from "@backplane/core/cpu";

export function ffiFailure(ffi: Extract<FfiInit, { ok: false }>): Error {
  // koffi absent on Node is a choice the user may make (no native libraries), not a fault.
  return ffi.notInstalled
    ? new NotInstalledError("koffi (native libraries on Node)", "npm install koffi", ffi.reason)
    : new Error(ffi.reason);
}
