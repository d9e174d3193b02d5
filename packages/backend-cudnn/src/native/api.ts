/**
 * THE table of the cuDNN C API this package binds (the graph, or "backend", API of cuDNN 9)
 * and every enumerator it uses. The prototypes are cudnn_graph.h's; test/headers.test.ts
 * parses the installed header and checks each declaration (argument count, size class of
 * every argument and of the result, handles carried as addresses) and each enumerator value.
 * cuDNN 9 renumbered its status codes (2000 = BAD_PARAM, 3000 = NOT_SUPPORTED...): they are
 * here as the header defines them, and the test holds them to it.
 *
 * Conventions: handles, descriptors, device pointers and streams are carried as addresses
 * ("usize"); host out-parameters and arrays are "buffer".
 */
import { defineLibrary } from "@backplane/core/cpu";

export const CUDNN_DECL = defineLibrary({
  /** size_t cudnnGetVersion(void): MAJOR * 10000 + MINOR * 100 + PATCH. */
  cudnnGetVersion: { args: [], returns: "usize" },
  /** size_t cudnnGetCudartVersion(void): the CUDA runtime cuDNN was built against. */
  cudnnGetCudartVersion: { args: [], returns: "usize" },
  /** size_t cudnnGetMaxDeviceVersion(void): the newest compute capability it knows. */
  cudnnGetMaxDeviceVersion: { args: [], returns: "usize" },
  /** const char *cudnnGetErrorString(cudnnStatus_t status) */
  cudnnGetErrorString: { args: ["i32"], returns: "cstring" },
  /** void cudnnGetLastErrorString(char *message, size_t max_size) */
  cudnnGetLastErrorString: { args: ["buffer", "usize"], returns: "void" },
  /** cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) */
  cudnnCreate: { args: ["buffer"], returns: "i32" },
  /** cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) */
  cudnnDestroy: { args: ["usize"], returns: "i32" },
  /** cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) */
  cudnnSetStream: { args: ["usize", "usize"], returns: "i32" },
  /** cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *) */
  cudnnBackendCreateDescriptor: { args: ["i32", "buffer"], returns: "i32" },
  /** cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t) */
  cudnnBackendDestroyDescriptor: { args: ["usize"], returns: "i32" },
  /** cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t) */
  cudnnBackendFinalize: { args: ["usize"], returns: "i32" },
  /** cudnnStatus_t cudnnBackendSetAttribute(desc, attributeName, attributeType, int64_t elementCount, const void *arrayOfElements) */
  cudnnBackendSetAttribute: { args: ["usize", "i32", "i32", "i64", "buffer"], returns: "i32" },
  /** cudnnStatus_t cudnnBackendGetAttribute(desc, attributeName, attributeType, int64_t requestedElementCount, int64_t *elementCount, void *arrayOfElements) */
  cudnnBackendGetAttribute: {
    args: ["usize", "i32", "i32", "i64", "buffer", "buffer"],
    returns: "i32",
  },
  /** cudnnStatus_t cudnnBackendExecute(cudnnHandle_t, executionPlan, variantPack) */
  cudnnBackendExecute: { args: ["usize", "usize", "usize"], returns: "i32" },
});

export type CudnnDecl = typeof CUDNN_DECL;

/** cudnnStatus_t (cuDNN 9 numbering). */
export const STATUS = {
  CUDNN_STATUS_SUCCESS: 0,
  CUDNN_STATUS_NOT_INITIALIZED: 1001,
  CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: 1002,
  CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED: 1008,
  CUDNN_STATUS_BAD_PARAM: 2000,
  CUDNN_STATUS_BAD_PARAM_NULL_POINTER: 2002,
  CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: 2004,
  CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: 2005,
  CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: 2008,
  CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: 2010,
  CUDNN_STATUS_NOT_SUPPORTED: 3000,
  CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: 3001,
  CUDNN_STATUS_NOT_SUPPORTED_SHAPE: 3002,
  CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: 3003,
  CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: 3004,
  CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER: 3005,
  CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH: 3007,
  CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT: 3010,
  CUDNN_STATUS_INTERNAL_ERROR: 4000,
  CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED: 4004,
  CUDNN_STATUS_EXECUTION_FAILED: 5000,
} as const;

/** cudnnBackendDescriptorType_t */
export const DESC = {
  CUDNN_BACKEND_POINTWISE_DESCRIPTOR: 0,
  CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: 1,
  CUDNN_BACKEND_ENGINE_DESCRIPTOR: 2,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: 3,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: 4,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: 5,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: 10,
  CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: 13,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: 15,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: 16,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR: 17,
  CUDNN_BACKEND_MATMUL_DESCRIPTOR: 18,
  CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: 19,
  CUDNN_BACKEND_REDUCTION_DESCRIPTOR: 21,
  CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: 22,
} as const;

/** cudnnBackendAttributeName_t */
export const ATTR = {
  CUDNN_ATTR_POINTWISE_MODE: 0,
  CUDNN_ATTR_POINTWISE_MATH_PREC: 1,
  CUDNN_ATTR_POINTWISE_AXIS: 9,
  CUDNN_ATTR_CONVOLUTION_COMP_TYPE: 100,
  CUDNN_ATTR_CONVOLUTION_CONV_MODE: 101,
  CUDNN_ATTR_CONVOLUTION_DILATIONS: 102,
  CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: 103,
  CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: 104,
  CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: 105,
  CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS: 106,
  CUDNN_ATTR_ENGINEHEUR_MODE: 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS: 202,
  CUDNN_ATTR_ENGINECFG_ENGINE: 300,
  CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE: 303,
  /** Deprecated in cuDNN 9 (CUDNN_DEPRECATED_ENUM), still read: the handle's device. */
  CUDNN_ATTR_EXECUTION_PLAN_HANDLE: 400,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: 402,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA: 700,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA: 701,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC: 702,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W: 703,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X: 704,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y: 705,
  CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR: 750,
  CUDNN_ATTR_OPERATION_POINTWISE_XDESC: 751,
  CUDNN_ATTR_OPERATION_POINTWISE_BDESC: 752,
  CUDNN_ATTR_OPERATION_POINTWISE_YDESC: 753,
  CUDNN_ATTR_OPERATION_POINTWISE_TDESC: 758,
  CUDNN_ATTR_OPERATIONGRAPH_HANDLE: 800,
  CUDNN_ATTR_OPERATIONGRAPH_OPS: 801,
  CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT: 802,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE: 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS: 902,
  CUDNN_ATTR_TENSOR_STRIDES: 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID: 906,
  CUDNN_ATTR_TENSOR_IS_VIRTUAL: 907,
  CUDNN_ATTR_TENSOR_IS_BY_VALUE: 908,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS: 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE: 1003,
  CUDNN_ATTR_ENGINE_OPERATION_GRAPH: 1300,
  CUDNN_ATTR_ENGINE_GLOBAL_INDEX: 1301,
  CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: 1303,
  CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: 1305,
  CUDNN_ATTR_MATMUL_COMP_TYPE: 1500,
  CUDNN_ATTR_OPERATION_MATMUL_ADESC: 1520,
  CUDNN_ATTR_OPERATION_MATMUL_BDESC: 1521,
  CUDNN_ATTR_OPERATION_MATMUL_CDESC: 1522,
  CUDNN_ATTR_OPERATION_MATMUL_DESC: 1523,
  CUDNN_ATTR_REDUCTION_OPERATOR: 1600,
  CUDNN_ATTR_REDUCTION_COMP_TYPE: 1601,
  CUDNN_ATTR_OPERATION_REDUCTION_XDESC: 1610,
  CUDNN_ATTR_OPERATION_REDUCTION_YDESC: 1611,
  CUDNN_ATTR_OPERATION_REDUCTION_DESC: 1612,
} as const;

/** cudnnBackendAttributeType_t */
export const TYPE = {
  CUDNN_TYPE_HANDLE: 0,
  CUDNN_TYPE_DATA_TYPE: 1,
  CUDNN_TYPE_BOOLEAN: 2,
  CUDNN_TYPE_INT64: 3,
  CUDNN_TYPE_FLOAT: 4,
  CUDNN_TYPE_DOUBLE: 5,
  CUDNN_TYPE_VOID_PTR: 6,
  CUDNN_TYPE_CONVOLUTION_MODE: 7,
  CUDNN_TYPE_HEUR_MODE: 8,
  CUDNN_TYPE_NUMERICAL_NOTE: 11,
  CUDNN_TYPE_POINTWISE_MODE: 14,
  CUDNN_TYPE_BACKEND_DESCRIPTOR: 15,
  CUDNN_TYPE_REDUCTION_OPERATOR_TYPE: 18,
  CUDNN_TYPE_BEHAVIOR_NOTE: 19,
} as const;

/** cudnnDataType_t */
export const DATA = {
  CUDNN_DATA_FLOAT: 0,
  CUDNN_DATA_DOUBLE: 1,
  CUDNN_DATA_HALF: 2,
  CUDNN_DATA_INT32: 4,
  CUDNN_DATA_BFLOAT16: 9,
  CUDNN_DATA_INT64: 10,
  CUDNN_DATA_BOOLEAN: 11,
} as const;

/** cudnnConvolutionMode_t: torch's conv2d is a cross-correlation. */
export const CONV_MODE = { CUDNN_CONVOLUTION: 0, CUDNN_CROSS_CORRELATION: 1 } as const;

/** cudnnPointwiseMode_t */
export const POINTWISE = {
  CUDNN_POINTWISE_ADD: 0,
  CUDNN_POINTWISE_MUL: 1,
  CUDNN_POINTWISE_DIV: 6,
  CUDNN_POINTWISE_SUB: 9,
  CUDNN_POINTWISE_EXP: 13,
  CUDNN_POINTWISE_LOG: 15,
  CUDNN_POINTWISE_RELU_FWD: 100,
  CUDNN_POINTWISE_CMP_GE: 303,
  CUDNN_POINTWISE_GEN_INDEX: 501,
  CUDNN_POINTWISE_BINARY_SELECT: 601,
} as const;

/** cudnnReduceTensorOp_t */
export const REDUCE = { CUDNN_REDUCE_TENSOR_ADD: 0, CUDNN_REDUCE_TENSOR_MAX: 3 } as const;

/** cudnnBackendHeurMode_t */
export const HEUR = {
  CUDNN_HEUR_MODE_INSTANT: 0,
  CUDNN_HEUR_MODE_B: 1,
  CUDNN_HEUR_MODE_FALLBACK: 2,
  CUDNN_HEUR_MODE_A: 3,
} as const;

/** cudnnBackendNumericalNote_t */
export const NUMERICAL_NOTE = {
  CUDNN_NUMERICAL_NOTE_TENSOR_CORE: 0,
  CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: 1,
  CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: 2,
  CUDNN_NUMERICAL_NOTE_FFT: 3,
  CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: 4,
  CUDNN_NUMERICAL_NOTE_WINOGRAD: 5,
  CUDNN_NUMERICAL_NOTE_TYPE_COUNT: 10,
} as const;

/** cudnnBackendBehaviorNote_t */
export const BEHAVIOR_NOTE = {
  CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: 0,
  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT: 5,
} as const;

/** The enum tables the header test checks, by the C enum each belongs to. */
export const ENUMS = {
  cudnnStatus_t: STATUS,
  cudnnBackendDescriptorType_t: DESC,
  cudnnBackendAttributeName_t: ATTR,
  cudnnBackendAttributeType_t: TYPE,
  cudnnDataType_t: DATA,
  cudnnConvolutionMode_t: CONV_MODE,
  cudnnPointwiseMode_t: POINTWISE,
  cudnnReduceTensorOp_t: REDUCE,
  cudnnBackendHeurMode_t: HEUR,
  cudnnBackendNumericalNote_t: NUMERICAL_NOTE,
  cudnnBackendBehaviorNote_t: BEHAVIOR_NOTE,
} as const;

/** "CUDNN_STATUS_BAD_PARAM" for 2000; the nearest category for codes this table lacks. */
export function statusName(code: number): string {
  for (const [name, value] of Object.entries(STATUS)) if (value === code) return name;
  const category = Math.floor(code / 1000) * 1000;
  for (const [name, value] of Object.entries(STATUS))
    if (value === category) return `${name} (${code})`;
  return `cudnnStatus ${code}`;
}
