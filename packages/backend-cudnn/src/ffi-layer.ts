/** The FFI implementation of the cuDNN layer: the real libcudnn.so.9. */
import { type NativeLibrary, ptrAddress, ptrOf } from "@backplane/core/cpu";
import type { CudnnLayer, CudnnSymbols } from "./layer.ts";
import type { CudnnDecl } from "./native/api.ts";

export class FfiLayer implements CudnnLayer {
  readonly kind = "ffi" as const;
  readonly symbols: CudnnSymbols;
  readonly path: string;
  constructor(lib: NativeLibrary<CudnnDecl>) {
    this.symbols = lib.symbols;
    this.path = lib.path;
  }
  addressOf(view: ArrayBufferView): bigint {
    return ptrAddress(ptrOf(view));
  }
}
