// backplane: arch=compute_75
// Layout kernels: batched strided 2-D copies (gathers, transposes, row/column-major
// conversions, zero padding), triangle zeroing, identities and scaling.
#include <stdint.h>

#include "common.cuh"

namespace {

template <typename W>
__device__ void copy2d(W* dst, const W* src, const long long* src_off, long long src_batch_stride,
                       long long batch, long long rows, long long cols, long long s_rs,
                       long long s_cs, long long d_batch_stride, long long d_rs, long long d_cs) {
  const long long per = rows * cols;
  const long long total = batch * per;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long b = i / per;
    const long long rc = i - b * per;
    const long long r = rc / cols;
    const long long c = rc - r * cols;
    const long long so = (src_off ? src_off[b] : b * src_batch_stride) + r * s_rs + c * s_cs;
    dst[b * d_batch_stride + r * d_rs + c * d_cs] = src[so];
  }
}

}  // namespace

#define BP_COPY2D(NAME, W)                                                                     \
  extern "C" __global__ void NAME(W* dst, const W* src, const long long* src_off,              \
                                  long long src_batch_stride, long long batch, long long rows, \
                                  long long cols, long long s_rs, long long s_cs,              \
                                  long long d_batch_stride, long long d_rs, long long d_cs) {  \
    copy2d<W>(dst, src, src_off, src_batch_stride, batch, rows, cols, s_rs, s_cs,              \
              d_batch_stride, d_rs, d_cs);                                                     \
  }

BP_COPY2D(copy2d_b1, uint8_t)
BP_COPY2D(copy2d_b2, uint16_t)
BP_COPY2D(copy2d_b4, uint32_t)
BP_COPY2D(copy2d_b8, unsigned long long)
BP_COPY2D(copy2d_b16, uint4)

// Zeroes the part above (upper == 0) or below (upper == 1) the main diagonal of a batch of
// contiguous row-major rows x cols matrices: what potrf and geqrf leave in the other triangle.
template <typename T>
__device__ void tri_zero(T* a, long long rows, long long cols, long long batch, int upper) {
  const long long per = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < batch * per;
       i += (long long)gridDim.x * blockDim.x) {
    const long long rc = i % per;
    const long long r = rc / cols;
    const long long c = rc - r * cols;
    if (upper ? c < r : c > r) a[i] = T(0);
  }
}

extern "C" __global__ void tri_zero_f32(float* a, long long rows, long long cols, long long batch,
                                        int upper) {
  tri_zero<float>(a, rows, cols, batch, upper);
}
extern "C" __global__ void tri_zero_f64(double* a, long long rows, long long cols, long long batch,
                                        int upper) {
  tri_zero<double>(a, rows, cols, batch, upper);
}

// A batch of n x n identity matrices.
template <typename T>
__device__ void eye(T* a, long long n, long long batch) {
  const long long per = n * n;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < batch * per;
       i += (long long)gridDim.x * blockDim.x) {
    const long long rc = i % per;
    a[i] = (rc / n == rc % n) ? T(1) : T(0);
  }
}

extern "C" __global__ void eye_f32(float* a, long long n, long long batch) { eye<float>(a, n, batch); }
extern "C" __global__ void eye_f64(double* a, long long n, long long batch) { eye<double>(a, n, batch); }

// x *= s over count elements (FFT normalisation).
extern "C" __global__ void scale_f32(float* x, long long count, float s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x)
    x[i] *= s;
}
extern "C" __global__ void scale_f64(double* x, long long count, double s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x)
    x[i] *= s;
}
