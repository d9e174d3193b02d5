// Shared device helpers of Backplane's CUDA kernels: dtype conversions, warp reductions and
// the dropout hash every attention kernel uses (so FLASH_ATTENTION, EFFICIENT_ATTENTION and
// MATH drop the same elements for the same seed).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace bp {

template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// Uniform in [0, 1) from (seed, batch, row, column): a counter-based hash, so any kernel can
// decide any element independently.
__device__ __forceinline__ float dropout_uniform(uint32_t seed, long long b, int row, int col) {
  uint32_t h = mix32(seed ^ 0x9e3779b9u);
  h = mix32(h ^ (uint32_t)b);
  h = mix32(h ^ (uint32_t)((unsigned long long)b >> 32));
  h = mix32(h ^ (uint32_t)row);
  h = mix32(h ^ (uint32_t)col);
  return (h >> 8) * (1.0f / 16777216.0f);
}

// Additive or boolean mask value for (row, col): 0 / -inf for bool, the value for additive.
template <typename T>
__device__ __forceinline__ float mask_value(const void* mask, int kind, long long off) {
  if (kind == 1) return reinterpret_cast<const uint8_t*>(mask)[off] ? 0.0f : -INFINITY;
  return to_float<T>(reinterpret_cast<const T*>(mask)[off]);
}

}  // namespace bp

// The argument list every attention kernel takes, in this order (fusedArgs in
// src/kernels/attention/kernels.ts packs it): element offsets of each batch entry into
// q/k/v/mask (int64 tables on the device), strides of the two last dims, sizes, scale,
// causal, dropout. BP_ATTENTION_ARGS passes them on, from an entry point to its template.
#define BP_ATTENTION_PARAMS_OF(T)                                                            \
  const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v, T *__restrict__ o, \
      const long long *__restrict__ q_off, const long long *__restrict__ k_off,              \
      const long long *__restrict__ v_off, const void *__restrict__ mask,                    \
      const long long *__restrict__ m_off, int mask_kind, long long q_s0, long long q_s1,    \
      long long k_s0, long long k_s1, long long v_s0, long long v_s1, long long m_s0,        \
      long long m_s1, int L, int S, int E, int Ev, float scale, int causal, float dropout_p, \
      unsigned int seed
#define BP_ATTENTION_PARAMS BP_ATTENTION_PARAMS_OF(T)
#define BP_ATTENTION_ARGS                                                                    \
  q, k, v, o, q_off, k_off, v_off, mask, m_off, mask_kind, q_s0, q_s1, k_s0, k_s1, v_s0, v_s1, \
      m_s0, m_s1, L, S, E, Ev, scale, causal, dropout_p, seed
