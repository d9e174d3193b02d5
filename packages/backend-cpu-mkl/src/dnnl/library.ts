/**
 * oneDNN (libdnnl.so.2, Debian's libdnnl2: 2.6) over FFI: only the C API the kernels use,
 * each declaration checked against the installed dnnl.h by test/dnnl-headers.test.ts.
 * Handles (dnnl_engine_t, dnnl_primitive_t...) are carried as addresses (usize), structs
 * the library fills (memory and op descriptors) as byte buffers of their 2.x size, and
 * out-parameters as one-element BigUint64Arrays. oneDNN 3.x changed how primitive
 * descriptors are created; it is refused with the reason (no 3.x headers to check against).
 */

import { NotInstalledError } from "@backplane/core";
import {
  defineLibrary,
  ffiCall,
  ffiStatus,
  type NativeLibrary,
  openLibrary,
  toArrayBuffer,
} from "@backplane/core/cpu";
import { pinLibrary } from "../native/libc.ts";

/** dnnl_status_t functions (an int), and those returning something else. */
const f = ffiStatus;
const fr = ffiCall;
const H = "usize"; // an opaque handle
const P = "pointer"; // a struct or array the library reads or fills

export const DNNL_DECL = defineLibrary({
  dnnl_engine_create: f(["buffer", "i32", "usize"]),
  dnnl_stream_create: f(["buffer", H, "u32"]),
  dnnl_stream_wait: f([H]),
  dnnl_memory_desc_init_by_tag: f([P, "i32", "buffer", "i32", "i32"]),
  dnnl_memory_desc_init_by_strides: f([P, "i32", "buffer", "i32", "buffer"]),
  dnnl_matmul_desc_init: f([P, P, P, P, P]),
  // The online-softmax step of flash-cpu-dnnl: row max and row sum, dst = exp(src0 - src1).
  dnnl_reduction_desc_init: f([P, "i32", P, P, "f32", "f32"]),
  dnnl_binary_desc_init: f([P, "i32", P, P, P]),
  dnnl_memory_desc_get_size: fr([P], "usize"),
  dnnl_memory_desc_equal: f([P, P]),
  dnnl_memory_create: f(["buffer", P, H, P]),
  dnnl_memory_set_data_handle: f([H, P]),
  dnnl_memory_destroy: f([H]),
  dnnl_dilated_convolution_forward_desc_init: f([
    P,
    "i32",
    "i32",
    P,
    P,
    P,
    P,
    "buffer",
    "buffer",
    "buffer",
    "buffer",
  ]),
  dnnl_primitive_desc_create: f(["buffer", H, H, H, H]),
  dnnl_primitive_desc_query: f([H, "i32", "i32", "buffer"]),
  dnnl_primitive_desc_query_md: fr([H, "i32", "i32"], "pointer"),
  dnnl_primitive_desc_destroy: f([H]),
  dnnl_reorder_primitive_desc_create: f(["buffer", P, H, P, H, H]),
  dnnl_primitive_create: f(["buffer", H]),
  dnnl_primitive_execute: f([H, H, "i32", "buffer"]),
  dnnl_primitive_destroy: f([H]),
  dnnl_primitive_attr_create: f(["buffer"]),
  dnnl_primitive_attr_destroy: f([H]),
  dnnl_primitive_attr_set_post_ops: f([H, H]),
  dnnl_primitive_attr_set_scratchpad_mode: f([H, "i32"]),
  dnnl_post_ops_create: f(["buffer"]),
  dnnl_post_ops_destroy: f([H]),
  dnnl_post_ops_append_eltwise: f([H, "f32", "i32", "f32", "f32"]),
  // flash-cpu-dnnl's P V products over several key blocks: dst += the product.
  dnnl_post_ops_append_sum: f([H, "f32"]),
  // The activations' zero point of the onednn engine's int8 convolution.
  dnnl_primitive_attr_set_zero_points: f([H, "i32", "i64", "i32", "buffer"]),
  // Its requantization, fused: per-channel multipliers, then the bias as a binary post-op.
  dnnl_primitive_attr_set_output_scales: f([H, "i64", "i32", "buffer"]),
  dnnl_post_ops_append_binary: f([H, "i32", P]),
  dnnl_set_verbose: f(["i32"]),
  dnnl_version: fr([], "pointer"),
});

/** The OpenMP runtime oneDNN is built on (Debian's: libgomp): its thread count. */
export const GOMP_DECL = defineLibrary({
  omp_set_num_threads: fr(["i32"], "void"),
  omp_get_max_threads: fr([], "i32"),
});

export type DnnlSymbols = NativeLibrary<typeof DNNL_DECL>["symbols"];

/** Sizes of the 2.x structs (dnnl_types.h; the header test compiles sizeof where cc exists). */
export const MEMORY_DESC_BYTES = 696;
export const CONV_DESC_BYTES = 5976;
export const MATMUL_DESC_BYTES = 2800;
export const BINARY_DESC_BYTES = 2096;
export const REDUCTION_DESC_BYTES = 1408;
export const EXEC_ARG_BYTES = 16;

/** Enumerators of dnnl_types.h that the kernels use (checked against the header). */
export const ENUMS = {
  dnnl_status_t: { dnnl_success: 0, dnnl_unimplemented: 3 },
  dnnl_data_type_t: { dnnl_bf16: 2, dnnl_f32: 3, dnnl_s32: 4, dnnl_s8: 5, dnnl_u8: 6 },
  dnnl_format_tag_t: {
    dnnl_format_tag_any: 1,
    dnnl_a: 2,
    dnnl_abc: 4,
    dnnl_abcd: 5,
    dnnl_acdb: 20,
    dnnl_aBcd16b: 69,
    dnnl_abcde: 7,
  },
  dnnl_prop_kind_t: { dnnl_forward_inference: 96 },
  dnnl_alg_kind_t: {
    dnnl_convolution_direct: 1,
    dnnl_convolution_winograd: 2,
    dnnl_eltwise_relu: 31,
    dnnl_eltwise_round: 64,
    dnnl_eltwise_linear: 127,
    dnnl_eltwise_exp: 191,
    dnnl_binary_add: 131056,
    dnnl_binary_sub: 131061,
    dnnl_reduction_max: 196594,
    dnnl_reduction_sum: 196596,
  },
  dnnl_engine_kind_t: { dnnl_cpu: 1 },
  dnnl_query_t: {
    dnnl_query_impl_info_str: 8,
    dnnl_query_src_md: 129,
    dnnl_query_weights_md: 131,
    dnnl_query_dst_md: 133,
    dnnl_query_scratchpad_md: 136,
  },
  dnnl_scratchpad_mode_t: { dnnl_scratchpad_mode_user: 1 },
  dnnl_stream_flags_t: { dnnl_stream_in_order: 1 },
} as const;

/** #define DNNL_ARG_* (dnnl_types.h). */
export const ARG = {
  SRC: 1,
  SRC_1: 2,
  DST: 17,
  WEIGHTS: 33,
  BIAS: 41,
  SCRATCHPAD: 80,
  /** DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1: the first post-op's operand. */
  POST_OP_0_SRC_1: 16386,
  FROM: 1,
  TO: 17,
} as const;

export const STATUS_NAMES = [
  "dnnl_success",
  "dnnl_out_of_memory",
  "dnnl_invalid_arguments",
  "dnnl_unimplemented",
  "dnnl_iterator_ends",
  "dnnl_runtime_error",
  "dnnl_not_required",
];

export interface LoadedDnnl {
  dnnl: DnnlSymbols;
  path: string;
  version: { major: number; minor: number; patch: number };
  setThreads?(n: number): void;
}

/** Reads dnnl_version()'s struct: int major, minor, patch. */
function readVersion(dnnl: DnnlSymbols): LoadedDnnl["version"] {
  const p = dnnl.dnnl_version();
  if (!p) return { major: 0, minor: 0, patch: 0 };
  const v = new Int32Array(toArrayBuffer(p, 12));
  return { major: v[0], minor: v[1], patch: v[2] };
}

/** oneDNN not found: what is missing and how to add it. */
export const NO_DNNL = {
  what: "oneDNN (libdnnl.so.2)",
  fix: "apt install libdnnl2, or set BACKPLANE_DNNL_PATH=/path/to/libdnnl.so.2",
};

/**
 * Loads libdnnl.so.2 and its OpenMP runtime, or says why not (never throws): a
 * NotInstalledError when no libdnnl is found, a reason when one is found and unusable.
 */
export async function loadDnnl(
  searchPaths?: readonly string[],
): Promise<LoadedDnnl | NotInstalledError | string> {
  const opts = searchPaths ? { searchPaths, systemSearch: false } : {};
  const r = await openLibrary(
    { name: "dnnl", candidates: ["dnnl"], versions: ["2"], env: "BACKPLANE_DNNL_PATH" },
    DNNL_DECL,
    opts,
  );
  if (!r.ok) return new NotInstalledError(NO_DNNL.what, NO_DNNL.fix, r.reason);
  const version = readVersion(r.lib.symbols);
  if (version.major !== 2)
    return `oneDNN ${version.major}.${version.minor} at ${r.path}: only the 2.x C API is supported (3.x creates primitive descriptors differently)`;
  const gomp = await openLibrary(
    { name: "gomp", candidates: ["gomp"], versions: ["1"] },
    GOMP_DECL,
  );
  // oneDNN's OpenMP threads outlive every call: neither library may be unmapped at exit.
  for (const path of [r.path, gomp.ok ? gomp.path : "libgomp.so.1"]) await pinLibrary(path);
  return {
    dnnl: r.lib.symbols,
    path: r.path,
    version,
    setThreads: gomp.ok ? (n) => gomp.lib.symbols.omp_set_num_threads(n) : undefined,
  };
}
