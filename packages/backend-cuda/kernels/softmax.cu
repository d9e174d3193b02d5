// backplane: arch=compute_75
// The MATH attention path's softmax: cuBLAS computes the scores S = Q K^T (fp32, or fp64 for
// float64 inputs) into [B, L, S]; this kernel applies scale, causal and boolean/additive
// masks, softmax and dropout row by row and writes the probabilities in the input dtype for
// the second GEMM (P V). A row whose every score is masked gives 0, as PyTorch 2.13 does on
// every backend; NaN scores still give NaN.
#include "common.cuh"

namespace {

constexpr int THREADS = 256;

template <typename A> __device__ __forceinline__ A neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return -INFINITY; }
template <> __device__ __forceinline__ double neg_inf<double>() { return -(double)INFINITY; }

template <typename A> __device__ __forceinline__ A exp_(A x);
template <> __device__ __forceinline__ float exp_<float>(float x) { return __expf(x); }
template <> __device__ __forceinline__ double exp_<double>(double x) { return exp(x); }

template <typename A, typename T> __device__ __forceinline__ A to_acc(T x) { return (A)bp::to_float<T>(x); }
template <> __device__ __forceinline__ double to_acc<double, double>(double x) { return x; }

template <typename A, typename T> __device__ __forceinline__ T from_acc(A x) { return bp::from_float<T>((float)x); }
template <> __device__ __forceinline__ double from_acc<double, double>(double x) { return x; }

template <typename A>
__device__ A block_reduce(A v, bool is_max, A* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const A other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? (other > v ? other : v) : v + other;
  }
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? shared[lane] : (is_max ? neg_inf<A>() : A(0));
    for (int o = 16; o > 0; o >>= 1) {
      const A other = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? (other > v ? other : v) : v + other;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

template <typename A, typename T>
__device__ void attn_softmax(const A* scores, T* probs, const void* mask, const long long* m_off,
                             int mask_kind, long long m_s0, long long m_s1, long long rows, int L,
                             int S, A scale, int causal, float dropout_p, unsigned int seed) {
  __shared__ A shared[THREADS / 32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long b = row / L;
    const int l = (int)(row - b * L);
    const A* x = scores + row * (long long)S;
    T* y = probs + row * (long long)S;
    const long long mo = mask_kind ? m_off[b] + l * m_s0 : 0;
    auto value = [&](int s) -> A {
      if (causal && s > l) return neg_inf<A>();
      A v = x[s] * scale;
      if (mask_kind == 1) {
        if (!reinterpret_cast<const uint8_t*>(mask)[mo + s * m_s1]) return neg_inf<A>();
      } else if (mask_kind == 2) {
        v += to_acc<A, T>(reinterpret_cast<const T*>(mask)[mo + s * m_s1]);
      }
      return v;
    };
    A mx = neg_inf<A>();
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
      const A v = value(s);
      mx = v > mx ? v : mx;
    }
    mx = block_reduce<A>(mx, true, shared);
    // Masked scores add nothing (exp(-inf - mx) = 0 unless mx is -inf too): a fully masked
    // row sums to exactly 0 and is written as zeros, while NaN scores keep the sum NaN.
    A sum = 0;
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
      const A v = value(s);
      sum += v == neg_inf<A>() ? A(0) : exp_<A>(v - mx);
    }
    sum = block_reduce<A>(sum, false, shared);
    const bool dead = sum == A(0);
    const A inv = A(1) / sum;
    const A inv_keep = dropout_p > 0.f ? A(1) / A(1.0f - dropout_p) : A(1);
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
      A w = dead ? A(0) : exp_<A>(value(s) - mx) * inv;
      if (dropout_p > 0.f) w = bp::dropout_uniform(seed, b, l, s) < dropout_p ? A(0) : w * inv_keep;
      y[s] = from_acc<A, T>(w);
    }
  }
}

}  // namespace

#define BP_SOFTMAX(NAME, A, T)                                                                \
  extern "C" __global__ void __launch_bounds__(THREADS)                                       \
      NAME(const A* scores, T* probs, const void* mask, const long long* m_off, int mask_kind, \
           long long m_s0, long long m_s1, long long rows, int L, int S, A scale, int causal,  \
           float dropout_p, unsigned int seed) {                                               \
    attn_softmax<A, T>(scores, probs, mask, m_off, mask_kind, m_s0, m_s1, rows, L, S, scale,   \
                       causal, dropout_p, seed);                                               \
  }

BP_SOFTMAX(attn_softmax_f32, float, float)
BP_SOFTMAX(attn_softmax_f64, double, double)
BP_SOFTMAX(attn_softmax_f16, float, __half)
BP_SOFTMAX(attn_softmax_bf16, float, __nv_bfloat16)
