// backplane: arch=compute_80
// FLASH_ATTENTION on tensor cores, in the manner of FlashAttention-2: a block of 4 warps owns
// 64 * MT query rows (16 * MT per warp: each K and V fragment read from shared memory serves MT
// products) and walks the keys in tiles of 64, the next K and V tiles loading (cp.async) while
// the current ones are used. Both products run on mma.sync.m16n8k16 (float16 / bfloat16 in,
// float32 accumulate): S = Q K^T with Q read from shared memory (from registers at one m-tile
// a warp), then O += P V with P taken straight from S's accumulators (the accumulator layout
// of two n8 tiles is the A-operand layout of one k16 step), so scores and probabilities never
// leave registers. Softmax is online, in base 2, per
// row across the 4 lanes that share it. Head dims 16, 32, 64, 96 and 128 (E == Ev); other
// head dims take attention_flash.cu's kernel. Same semantics as that kernel: causal is
// top-left, dropout drops the same elements (bp::dropout_uniform), a row with no key left
// gives 0, a NaN or +inf score gives NaN. One difference: a key a row does not attend (past
// the causal diagonal, dropped) still enters the P V product with weight 0 when its tile is
// walked, so an inf or NaN in its V row gives NaN there, as a matmul-based path does; the
// plain kernel skips such keys.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit A/B): lane = 4 g + t;
//   A (16x16, row-major): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//   B (16x8, k-major):    b0 (k 2t..2t+1, n g), b1 (k 2t+8..2t+9, n g)
//   C (16x8, float):      c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1)
// ldmatrix.x4 gives lane the (g, 2t..2t+1) pair of each of four 8x8 tiles whose rows lanes
// 8j..8j+7 address (.trans: the (2t..2t+1, g) pair), so Q, K and V tiles in row-major shared
// memory load straight into A and B fragments; V needs no transpose.
#include "common.cuh"

namespace {

constexpr int TC_WARPS = 4;
constexpr int TC_KEYS = 64;  // keys per tile

template <typename T> struct Pair;
template <> struct Pair<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};
template <> struct Pair<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1);
#define BP_MMA16816(T, PTX_TYPE)                                                              \
  template <>                                                                                 \
  __device__ __forceinline__ void mma16816<T>(float (&c)[4], const uint32_t (&a)[4],          \
                                              uint32_t b0, uint32_t b1) {                     \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX_TYPE "." PTX_TYPE              \
                 ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                             \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));            \
  }
BP_MMA16816(__half, "f16")
BP_MMA16816(__nv_bfloat16, "bf16")

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 tiles of 16-bit elements from shared memory (lanes 8j..8j+7 address tile j's rows);
// the _trans form transposes each tile.
#define BP_LDMATRIX_X4(NAME, QUALIFIER)                                                   \
  __device__ __forceinline__ void NAME(uint32_t (&r)[4], const void* row) {               \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" QUALIFIER ".shared.b16 {%0,%1,%2,%3}, [%4];\n" \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                          \
                 : "r"(shared_address(row)));                                             \
  }
BP_LDMATRIX_X4(ldmatrix_x4, "")
BP_LDMATRIX_X4(ldmatrix_x4_trans, ".trans")

// 16 bytes global -> shared without a register stop; zeros when `valid` is false (no read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Starts copying rows [r0, r0 + ROWS) of a [*, D] operand (strides s0, s1) into a shared tile
// (row stride D + 8), zeros from row `limit`. Rows 16-byte aligned with unit column stride go
// by cp.async (done at the next cp_async_wait); others element by element, done on return.
template <typename T, int D, int ROWS>
__device__ __forceinline__ void stage(T* dst, const T* src, long long s0, long long s1, int r0,
                                      int limit) {
  constexpr int LD = D + 8;
  const bool vec = s1 == 1 && (s0 & 7) == 0 && (reinterpret_cast<uintptr_t>(src) & 15) == 0;
  if (vec) {
    constexpr int CHUNKS = D / 8;
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += blockDim.x) {
      const int r = i / CHUNKS;
      const int e = (i - r * CHUNKS) * 8;
      const int row = r0 + r;
      const bool valid = row < limit;
      cp_async16(dst + r * LD + e, valid ? src + row * s0 + e : src, valid);
    }
    return;
  }
  for (int i = threadIdx.x; i < ROWS * D; i += blockDim.x) {
    const int r = i / D;
    const int e = i - r * D;
    const int row = r0 + r;
    dst[r * LD + e] = row < limit ? src[row * s0 + e * s1] : bp::from_float<T>(0.f);
  }
}

template <typename T, int D, int MT>
__device__ void flash_tc_fwd(BP_ATTENTION_PARAMS) {
  constexpr int ROWS = 16 * MT * TC_WARPS;  // query rows per block
  constexpr int LD = D + 8;                 // tile row: the padding keeps ldmatrix conflict-free
  constexpr int TILE = TC_KEYS * LD;        // elements of one K or V tile
  constexpr int KC = D / 16;                // k16 steps of Q K^T
  constexpr int SN = TC_KEYS / 8;           // n8 tiles of a score tile
  constexpr int ON = D / 8;                 // n8 tiles of the output
  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);  // the block's Q rows, [ROWS][LD]
  T* kbuf = qs + ROWS * LD;            // two K tiles
  T* vbuf = kbuf + 2 * TILE;           // two V tiles
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const long long b = blockIdx.y;
  const int row0 = blockIdx.x * ROWS;
  const int wr = warp * 16 * MT;  // the warp's first row in the block; m-tile mt adds 16 mt
  int rows[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    rows[mt][0] = row0 + wr + 16 * mt + g;
    rows[mt][1] = rows[mt][0] + 8;
  }
  (void)mask;
  (void)m_off;
  (void)mask_kind;
  (void)m_s0;
  (void)m_s1;
  (void)E;
  const int last_row = min(L, row0 + ROWS) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  const int tiles = (s_end + TC_KEYS - 1) / TC_KEYS;
  const T* kb = k + k_off[b];
  const T* vb = v + v_off[b];

  stage<T, D, ROWS>(qs, q + q_off[b], q_s0, q_s1, row0, L);
  if (tiles > 0) {
    stage<T, D, TC_KEYS>(kbuf, kb, k_s0, k_s1, 0, S);
    stage<T, D, TC_KEYS>(vbuf, vb, v_s0, v_s1, 0, S);
  }
  cp_async_commit();
  // One m-tile a warp (the widest head dims): Q's fragments stay in registers for the walk,
  // measured 8-15% faster at d = 128 than reading them from shared memory every tile.
  uint32_t qreg[MT == 1 ? KC : 1][4];
  if constexpr (MT == 1) {
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < KC; ++kc)
      ldmatrix_x4(qreg[kc], qs + (wr + (lane & 15)) * LD + kc * 16 + (lane >> 4) * 8);
  }

  float acc[MT][ON][4];  // this lane's share of the warp's output rows
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < ON; ++n) acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.f;
  float m[MT][2];
  float lsum[MT][2];  // this lane's share of each row's sum
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    m[mt][0] = m[mt][1] = -INFINITY;
    lsum[mt][0] = lsum[mt][1] = 0.f;
  }
  const float scale2 = scale * 1.4426950408889634f;  // scores in base 2
  const float inv_keep = dropout_p > 0.f ? 1.f / (1.f - dropout_p) : 1.f;

  for (int it = 0; it < tiles; ++it) {
    const int t0 = it * TC_KEYS;
    const T* ks = kbuf + (it & 1) * TILE;
    const T* vs = vbuf + (it & 1) * TILE;
    if (it + 1 < tiles) {
      stage<T, D, TC_KEYS>(kbuf + ((it + 1) & 1) * TILE, kb, k_s0, k_s1, t0 + TC_KEYS, S);
      stage<T, D, TC_KEYS>(vbuf + ((it + 1) & 1) * TILE, vb, v_s0, v_s1, t0 + TC_KEYS, S);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    float s[MT][SN][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < SN; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) {
      uint32_t qf[MT][4];
      if constexpr (MT == 1) {
#pragma unroll
        for (int j = 0; j < 4; ++j) qf[0][j] = qreg[kc][j];
      } else {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          ldmatrix_x4(qf[mt], qs + (wr + 16 * mt + (lane & 15)) * LD + kc * 16 + (lane >> 4) * 8);
      }
#pragma unroll
      for (int n = 0; n < SN; n += 2) {
        uint32_t kf[4];
        ldmatrix_x4(kf, ks + (n * 8 + (lane >> 4) * 8 + (lane & 7)) * LD + kc * 16 +
                            ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<T>(s[mt][n], qf[mt], kf[0], kf[1]);
          mma16816<T>(s[mt][n + 1], qf[mt], kf[2], kf[3]);
        }
      }
    }

#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < SN; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int col = t0 + n * 8 + 2 * t + (i & 1);
          const int r = i >> 1;
          float x = s[mt][n][i] * scale2;
          if (col >= S || (causal && col > rows[mt][r])) x = -INFINITY;
          s[mt][n][i] = x;
          mx[r] = fmaxf(mx[r], x);
        }
      }
      float corr[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float m_new = fmaxf(m[mt][r], mx[r]);
        corr[r] = m_new == -INFINITY ? 1.f : exp2f(m[mt][r] - m_new);
        m[mt][r] = m_new;
        lsum[mt][r] *= corr[r];
      }
#pragma unroll
      for (int n = 0; n < SN; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = i >> 1;
          const float x = s[mt][n][i];
          float p = x == -INFINITY ? 0.f : exp2f(x - m[mt][r]);
          lsum[mt][r] += p;
          if (dropout_p > 0.f && p != 0.f) {
            const int col = t0 + n * 8 + 2 * t + (i & 1);
            p = bp::dropout_uniform(seed, b, rows[mt][r], col) < dropout_p ? 0.f : p * inv_keep;
          }
          s[mt][n][i] = p;
        }
      }
#pragma unroll
      for (int n = 0; n < ON; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][n][i] *= corr[i >> 1];
      }
    }
#pragma unroll
    for (int kc = 0; kc < TC_KEYS / 16; ++kc) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = Pair<T>::pack(s[mt][2 * kc][0], s[mt][2 * kc][1]);
        a[mt][1] = Pair<T>::pack(s[mt][2 * kc][2], s[mt][2 * kc][3]);
        a[mt][2] = Pair<T>::pack(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
        a[mt][3] = Pair<T>::pack(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
      }
#pragma unroll
      for (int n = 0; n < ON; n += 2) {
        uint32_t vf[4];
        ldmatrix_x4_trans(vf, vs + (kc * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LD + n * 8 +
                                  (lane >> 4) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<T>(acc[mt][n], a[mt], vf[0], vf[1]);
          mma16816<T>(acc[mt][n + 1], a[mt], vf[2], vf[3]);
        }
      }
    }
    __syncthreads();  // this tile's buffers are free for the tile after next
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = lsum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int l = rows[mt][r];
      if (l >= L) continue;
      T* orow = o + (b * L + l) * (long long)Ev;
      const float inv = 1.f / sum;
#pragma unroll
      for (int n = 0; n < ON; ++n) {
        float x[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float y = acc[mt][n][2 * r + j];
          x[j] = sum > 0.f ? y * inv : sum == 0.f ? 0.f : NAN;
        }
        *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * t) = Pair<T>::pack(x[0], x[1]);
      }
    }
  }
}

}  // namespace

// Two m16 tiles per warp (128 rows a block) up to head dim 96; one above, where two would
// not fit the registers without spilling.
#define TC_MT(D) ((D) <= 96 ? 2 : 1)

#define BP_FLASH_TC(TYPE, SUFFIX, D)                                                     \
  extern "C" __global__ void __launch_bounds__(TC_WARPS * 32)                               \
      flash_tc_fwd_##SUFFIX##_d##D(BP_ATTENTION_PARAMS_OF(TYPE)) {                          \
    flash_tc_fwd<TYPE, D, TC_MT(D)>(BP_ATTENTION_ARGS);                                      \
  }

#define BP_FLASH_TC_DIMS(TYPE, SUFFIX) \
  BP_FLASH_TC(TYPE, SUFFIX, 16)        \
  BP_FLASH_TC(TYPE, SUFFIX, 32)        \
  BP_FLASH_TC(TYPE, SUFFIX, 64)        \
  BP_FLASH_TC(TYPE, SUFFIX, 96)        \
  BP_FLASH_TC(TYPE, SUFFIX, 128)

BP_FLASH_TC_DIMS(__half, f16)
BP_FLASH_TC_DIMS(__nv_bfloat16, bf16)
