// backplane: arch=compute_75
// EFFICIENT_ATTENTION: a memory-efficient attention forward (online softmax, never storing
// the L x S scores). One warp per query row: for each chunk of 32 keys every lane scores one
// key against the row (held in shared memory), the warp updates the running max and sum,
// and each lane accumulates its share of the head dimension of the output in fp32.
// float32, float16 and bfloat16; head dims up to 256; boolean and additive masks; causal
// (top-left aligned, as torch); dropout; any strides (per-batch offset tables).
#include "common.cuh"

namespace {

constexpr int WARPS = 4;
constexpr int MAX_D = 256;

template <typename T>
__device__ void mem_efficient_fwd(BP_ATTENTION_PARAMS) {
  extern __shared__ float q_shared[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const long long b = blockIdx.y;
  const int l = blockIdx.x * WARPS + warp;
  if (l >= L) return;
  float* qs = q_shared + warp * E;
  const T* qrow = q + q_off[b] + l * q_s0;
  for (int e = lane; e < E; e += 32) qs[e] = bp::to_float<T>(qrow[e * q_s1]) * scale;
  __syncwarp();

  constexpr int NV = MAX_D / 32;
  float acc[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) acc[i] = 0.f;
  float m = -INFINITY;
  float lsum = 0.f;
  const int s_end = causal ? min(S, l + 1) : S;
  const T* kb = k + k_off[b];
  const T* vb = v + v_off[b];
  const long long mo = mask_kind ? m_off[b] + l * m_s0 : 0;
  const float inv_keep = dropout_p > 0.f ? 1.f / (1.f - dropout_p) : 1.f;

  for (int s0 = 0; s0 < s_end; s0 += 32) {
    const int s = s0 + lane;
    float sc = -INFINITY;
    if (s < s_end) {
      const T* kr = kb + s * k_s0;
      float d = 0.f;
      for (int e = 0; e < E; ++e) d += qs[e] * bp::to_float<T>(kr[e * k_s1]);
      sc = d;
      if (mask_kind) sc += bp::mask_value<T>(mask, mask_kind, mo + s * m_s1);
    }
    const float cmax = bp::warp_max(sc);
    if (cmax == -INFINITY) continue;
    const float m_new = fmaxf(m, cmax);
    const float corr = __expf(m - m_new);
    float p = sc == -INFINITY ? 0.f : __expf(sc - m_new);
    lsum = lsum * corr + bp::warp_sum(p);
    if (dropout_p > 0.f && s < s_end)
      p = bp::dropout_uniform(seed, b, l, s) < dropout_p ? 0.f : p * inv_keep;
#pragma unroll
    for (int i = 0; i < NV; ++i) acc[i] *= corr;
    const int count = min(32, s_end - s0);
    for (int j = 0; j < count; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      if (pj == 0.f) continue;
      const T* vr = vb + (s0 + j) * v_s0;
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int e = lane + 32 * i;
        if (e < Ev) acc[i] += pj * bp::to_float<T>(vr[e * v_s1]);
      }
    }
    m = m_new;
  }
  // Every key masked: lsum is 0 and the row is 0, as PyTorch 2.13 gives (NaN scores: NaN).
  const float inv = 1.f / lsum;
  T* orow = o + (b * L + l) * (long long)Ev;
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int e = lane + 32 * i;
    if (e < Ev) orow[e] = bp::from_float<T>(lsum > 0.f ? acc[i] * inv : lsum == 0.f ? 0.f : NAN);
  }
}

}  // namespace

#define BP_MEM_EFFICIENT(NAME, TYPE)                                                     \
  extern "C" __global__ void __launch_bounds__(WARPS * 32) NAME(BP_ATTENTION_PARAMS_OF(TYPE)) { \
    mem_efficient_fwd<TYPE>(BP_ATTENTION_ARGS);                                            \
  }

BP_MEM_EFFICIENT(mem_efficient_fwd_f32, float)
BP_MEM_EFFICIENT(mem_efficient_fwd_f16, __half)
BP_MEM_EFFICIENT(mem_efficient_fwd_bf16, __nv_bfloat16)
