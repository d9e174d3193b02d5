/**
 * The helper's C ABI (native/bp_mps.h) as FFI declarations, with its status codes and
 * enumerations. test/abi.test.ts holds these to the header: every prototype, every
 * #define, nothing missing and nothing extra.
 */
import { defineLibrary, type FfiType, type LibraryDecl } from "@backplane/core/cpu";

/** BP_MPS_ABI_VERSION: a helper answering another number is refused. */
export const ABI_VERSION = 1;

export const STATUS = {
  OK: 0,
  E_INVALID_ARGUMENT: 1,
  E_FREED_BUFFER: 2,
  E_OUT_OF_RANGE: 3,
  E_OUT_OF_MEMORY: 4,
  E_UNSUPPORTED: 5,
  E_NO_DEVICE: 6,
  E_DEVICE: 7,
} as const;

const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, `BP_MPS_${k}`]));

/** "BP_MPS_E_FREED_BUFFER" for 2; the number itself for a code the ABI does not define. */
export function statusName(status: number): string {
  return STATUS_NAMES[status] ?? `status ${status}`;
}

/** Op dtypes (BP_MPS_F32...). */
export const DTYPE = { float32: 0, float16: 1, bfloat16: 2 } as const;
export type MpsDtype = keyof typeof DTYPE;

/** Element-wise ops (BP_MPS_ADD...). */
export const ELEMENTWISE = { ADD: 0, MUL: 1, RELU: 2, GELU: 3, GELU_TANH: 4 } as const;

/** Attention masks (BP_MPS_MASK_...). */
export const MASK = { NONE: 0, BOOL: 1, ADDITIVE: 2, CAUSAL: 3 } as const;

/** BP_MPS_MAX_RANK. */
export const MAX_RANK = 8;

type Fn<A extends readonly FfiType[], R extends FfiType> = {
  readonly args: A;
  readonly returns: R;
};

/** The declaration's type, written out (JSR's public API wants explicit types). */
export interface MpsDecl extends LibraryDecl {
  readonly bp_mps_abi_version: Fn<readonly [], "i32">;
  readonly bp_mps_implementation: Fn<readonly [], "cstring">;
  readonly bp_mps_last_error: Fn<readonly [], "cstring">;
  readonly bp_mps_init: Fn<readonly [], "i32">;
  readonly bp_mps_device_name: Fn<readonly ["buffer", "i32"], "i32">;
  readonly bp_mps_device_info: Fn<readonly ["buffer"], "i32">;
  readonly bp_mps_os_version: Fn<readonly ["buffer"], "i32">;
  readonly bp_mps_set_memory_limit: Fn<readonly ["u64"], "i32">;
  readonly bp_mps_memory_stats: Fn<readonly ["buffer"], "i32">;
  readonly bp_mps_buffer_alloc: Fn<readonly ["u64", "buffer"], "i32">;
  readonly bp_mps_buffer_free: Fn<readonly ["u64"], "i32">;
  readonly bp_mps_buffer_write: Fn<readonly ["u64", "u64", "buffer", "u64"], "i32">;
  readonly bp_mps_buffer_read: Fn<readonly ["u64", "u64", "buffer", "u64"], "i32">;
  readonly bp_mps_buffer_copy: Fn<readonly ["u64", "u64", "u64", "u64", "u64"], "i32">;
  readonly bp_mps_synchronize: Fn<readonly [], "i32">;
  readonly bp_mps_strided_copy: Fn<
    readonly ["i32", "u64", "i64", "i32", "buffer", "buffer", "u64"],
    "i32"
  >;
  readonly bp_mps_matmul: Fn<
    readonly ["i32", "u64", "u64", "u64", "i64", "i64", "i64", "i64", "i32", "i32"],
    "i32"
  >;
  readonly bp_mps_conv2d: Fn<readonly ["i32", "u64", "u64", "u64", "u64", "buffer"], "i32">;
  readonly bp_mps_softmax: Fn<readonly ["i32", "u64", "u64", "i64", "i64", "i64", "i32"], "i32">;
  readonly bp_mps_sdpa: Fn<
    readonly ["i32", "u64", "u64", "u64", "u64", "i32", "u64", "buffer", "f64"],
    "i32"
  >;
  readonly bp_mps_elementwise: Fn<
    readonly ["i32", "i32", "u64", "u64", "u64", "i32", "buffer", "buffer", "buffer"],
    "i32"
  >;
}

export const MPS_DECL: MpsDecl = defineLibrary({
  bp_mps_abi_version: { args: [], returns: "i32" },
  bp_mps_implementation: { args: [], returns: "cstring" },
  bp_mps_last_error: { args: [], returns: "cstring" },
  bp_mps_init: { args: [], returns: "i32" },
  bp_mps_device_name: { args: ["buffer", "i32"], returns: "i32" },
  bp_mps_device_info: { args: ["buffer"], returns: "i32" },
  bp_mps_os_version: { args: ["buffer"], returns: "i32" },
  bp_mps_set_memory_limit: { args: ["u64"], returns: "i32" },
  bp_mps_memory_stats: { args: ["buffer"], returns: "i32" },
  bp_mps_buffer_alloc: { args: ["u64", "buffer"], returns: "i32" },
  bp_mps_buffer_free: { args: ["u64"], returns: "i32" },
  bp_mps_buffer_write: { args: ["u64", "u64", "buffer", "u64"], returns: "i32" },
  bp_mps_buffer_read: { args: ["u64", "u64", "buffer", "u64"], returns: "i32" },
  bp_mps_buffer_copy: { args: ["u64", "u64", "u64", "u64", "u64"], returns: "i32" },
  bp_mps_synchronize: { args: [], returns: "i32" },
  bp_mps_strided_copy: {
    args: ["i32", "u64", "i64", "i32", "buffer", "buffer", "u64"],
    returns: "i32",
  },
  bp_mps_matmul: {
    args: ["i32", "u64", "u64", "u64", "i64", "i64", "i64", "i64", "i32", "i32"],
    returns: "i32",
  },
  bp_mps_conv2d: { args: ["i32", "u64", "u64", "u64", "u64", "buffer"], returns: "i32" },
  bp_mps_softmax: { args: ["i32", "u64", "u64", "i64", "i64", "i64", "i32"], returns: "i32" },
  bp_mps_sdpa: {
    args: ["i32", "u64", "u64", "u64", "u64", "i32", "u64", "buffer", "f64"],
    returns: "i32",
  },
  bp_mps_elementwise: {
    args: ["i32", "i32", "u64", "u64", "u64", "i32", "buffer", "buffer", "buffer"],
    returns: "i32",
  },
});
