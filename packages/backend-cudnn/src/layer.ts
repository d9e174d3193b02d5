/**
 * The cuDNN layer: the C entry points every piece of host logic in this package goes
 * through. Two implementations: the FFI one (native/load.ts binds the real libcudnn.so.9),
 * and the RecordingLayer (recording.ts), which keeps descriptors as JS objects and answers
 * heuristics from a table of fake engines, so plan selection is tested without a GPU.
 */
import type { NativeLibrary } from "@backplane/core/cpu";
import type { CudnnDecl } from "./native/api.ts";

export type CudnnSymbols = NativeLibrary<CudnnDecl>["symbols"];

export interface CudnnLayer {
  readonly kind: "ffi" | "recording";
  readonly symbols: CudnnSymbols;
  /** Where the library was loaded from. */
  readonly path: string;
  /** The host address of a buffer (by-value scalars are passed by their host address). */
  addressOf(view: ArrayBufferView): bigint;
}
