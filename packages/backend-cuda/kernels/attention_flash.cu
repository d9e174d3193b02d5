// backplane: arch=compute_80
// FLASH_ATTENTION: a tiled forward in the manner of FlashAttention-2. A block of 4 warps
// owns 16 query rows (scaled, in shared memory as fp32); it walks the keys in tiles of 64,
// staging each K and V tile in shared memory once for all 16 rows, scores the tile, updates
// each row's running max and sum (online softmax) and accumulates the output in fp32
// registers. The L x S scores never exist in memory. float16 and bfloat16, head dim a
// multiple of 8 up to 256 with Ev == E (torch's flash constraints), causal (top-left),
// dropout; no attention mask. Plain CUDA C (no tensor-core MMA): sm_80+, as torch requires.
#include "common.cuh"

namespace {

constexpr int WARPS = 4;
constexpr int ROWS_PER_WARP = 4;
constexpr int BR = WARPS * ROWS_PER_WARP;
constexpr int BC = 64;
constexpr int MAX_D = 256;
constexpr int NV = MAX_D / 32;

template <typename T>
__device__ void flash_fwd(BP_ATTENTION_PARAMS) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int ks_stride = E + 2;  // padding: lanes reading different keys hit different banks
  float* qs = reinterpret_cast<float*>(smem);
  T* ks = reinterpret_cast<T*>(qs + BR * E);
  T* vs = ks + BC * ks_stride;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const long long b = blockIdx.y;
  const int row0 = blockIdx.x * BR;

  for (int i = threadIdx.x; i < BR * E; i += blockDim.x) {
    const int r = i / E;
    const int e = i - r * E;
    const int l = row0 + r;
    qs[i] = l < L ? bp::to_float<T>(q[q_off[b] + l * q_s0 + e * q_s1]) * scale : 0.f;
  }

  float acc[ROWS_PER_WARP][NV];
  float m[ROWS_PER_WARP];
  float lsum[ROWS_PER_WARP];
#pragma unroll
  for (int r = 0; r < ROWS_PER_WARP; ++r) {
    m[r] = -INFINITY;
    lsum[r] = 0.f;
#pragma unroll
    for (int i = 0; i < NV; ++i) acc[r][i] = 0.f;
  }
  const int last_row = min(L, row0 + BR) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  const float inv_keep = dropout_p > 0.f ? 1.f / (1.f - dropout_p) : 1.f;
  const T* kb = k + k_off[b];
  const T* vb = v + v_off[b];

  for (int t0 = 0; t0 < s_end; t0 += BC) {
    __syncthreads();
    for (int i = threadIdx.x; i < BC * E; i += blockDim.x) {
      const int j = i / E;
      const int e = i - j * E;
      const int s = t0 + j;
      ks[j * ks_stride + e] = s < S ? kb[s * k_s0 + e * k_s1] : bp::from_float<T>(0.f);
      vs[j * Ev + e] = s < S ? vb[s * v_s0 + e * v_s1] : bp::from_float<T>(0.f);
    }
    __syncthreads();
    const int tile = min(BC, s_end - t0);
#pragma unroll
    for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
      const int r = warp * ROWS_PER_WARP + rr;
      const int l = row0 + r;
      if (l >= L) continue;
      const float* qr = qs + r * E;
      float sc[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = lane + 32 * h;
        const int s = t0 + j;
        float d = -INFINITY;
        if (j < tile && !(causal && s > l)) {
          const T* kr = ks + j * ks_stride;
          d = 0.f;
          for (int e = 0; e < E; ++e) d += qr[e] * bp::to_float<T>(kr[e]);
        }
        sc[h] = d;
      }
      const float cmax = bp::warp_max(fmaxf(sc[0], sc[1]));
      if (cmax == -INFINITY) continue;
      const float m_new = fmaxf(m[rr], cmax);
      const float corr = __expf(m[rr] - m_new);
      float p[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) p[h] = sc[h] == -INFINITY ? 0.f : __expf(sc[h] - m_new);
      lsum[rr] = lsum[rr] * corr + bp::warp_sum(p[0] + p[1]);
      if (dropout_p > 0.f) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int s = t0 + lane + 32 * h;
          if (p[h] != 0.f)
            p[h] = bp::dropout_uniform(seed, b, l, s) < dropout_p ? 0.f : p[h] * inv_keep;
        }
      }
#pragma unroll
      for (int i = 0; i < NV; ++i) acc[rr][i] *= corr;
      for (int j = 0; j < tile; ++j) {
        const float pj = __shfl_sync(0xffffffffu, j < 32 ? p[0] : p[1], j & 31);
        if (pj == 0.f) continue;
        const T* vr = vs + j * Ev;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const int e = lane + 32 * i;
          if (e < Ev) acc[rr][i] += pj * bp::to_float<T>(vr[e]);
        }
      }
      m[rr] = m_new;
    }
  }
#pragma unroll
  for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
    const int l = row0 + warp * ROWS_PER_WARP + rr;
    if (l >= L) continue;
    T* orow = o + (b * L + l) * (long long)Ev;
    const float inv = 1.f / lsum[rr];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e = lane + 32 * i;
      if (e < Ev) orow[e] = bp::from_float<T>(lsum[rr] > 0.f ? acc[rr][i] * inv : lsum[rr] == 0.f ? 0.f : NAN);
    }
  }
}

}  // namespace

#define BP_FLASH(NAME, TYPE)                                                             \
  extern "C" __global__ void __launch_bounds__(WARPS * 32) NAME(BP_ATTENTION_PARAMS_OF(TYPE)) { \
    flash_fwd<TYPE>(BP_ATTENTION_ARGS);                                                    \
  }

BP_FLASH(flash_fwd_f16, __half)
BP_FLASH(flash_fwd_bf16, __nv_bfloat16)
