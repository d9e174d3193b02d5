/*
 * libbackplane_mps: the C ABI between @backplane/backend-mps and Apple's GPUs.
 *
 * Every function returns a status (BP_MPS_OK or an error code) unless it says otherwise;
 * after an error, bp_mps_last_error() holds a message for the calling thread. Buffers are
 * 64-bit handles (a slot and a generation), never raw pointers: a freed or forged handle is
 * an error, not a crash. Operands of the ops are whole buffers read from byte 0 and laid out
 * contiguously (row-major); the caller makes views contiguous with bp_mps_strided_copy.
 *
 * Two implementations share this ABI and bp_mps_common.c: bp_mps_metal.c (Metal and
 * MPSGraph through the Objective-C runtime, built for macOS) and bp_mps_cpu.c (a CPU stand-in
 * that the tests load on Linux to exercise everything above the hardware).
 */
#ifndef BP_MPS_H
#define BP_MPS_H

#include <stdint.h>

#define BP_MPS_ABI_VERSION 1

/* The exported entry points (the library is built with hidden visibility). */
#define BP_MPS_API __attribute__((visibility("default")))

/* Status codes. */
#define BP_MPS_OK 0
#define BP_MPS_E_INVALID_ARGUMENT 1
#define BP_MPS_E_FREED_BUFFER 2
#define BP_MPS_E_OUT_OF_RANGE 3
#define BP_MPS_E_OUT_OF_MEMORY 4
#define BP_MPS_E_UNSUPPORTED 5
#define BP_MPS_E_NO_DEVICE 6
#define BP_MPS_E_DEVICE 7

/* Element types of the ops. */
#define BP_MPS_F32 0
#define BP_MPS_F16 1
#define BP_MPS_BF16 2

/* Element-wise ops. */
#define BP_MPS_ADD 0
#define BP_MPS_MUL 1
#define BP_MPS_RELU 2
#define BP_MPS_GELU 3
#define BP_MPS_GELU_TANH 4

/* Attention masks. */
#define BP_MPS_MASK_NONE 0
#define BP_MPS_MASK_BOOL 1
#define BP_MPS_MASK_ADDITIVE 2
#define BP_MPS_MASK_CAUSAL 3

/* Largest rank of bp_mps_strided_copy and of element-wise broadcasting. */
#define BP_MPS_MAX_RANK 8

#ifdef __cplusplus
extern "C" {
#endif

/* Returns BP_MPS_ABI_VERSION (not a status). */
BP_MPS_API int32_t bp_mps_abi_version(void);
/* Returns "metal" or "cpu-stand-in" (not a status). */
BP_MPS_API const char *bp_mps_implementation(void);
/* The calling thread's message for the last error (never NULL). */
BP_MPS_API const char *bp_mps_last_error(void);

/* Finds the device; BP_MPS_E_NO_DEVICE with the reason when there is none. Idempotent. */
BP_MPS_API int32_t bp_mps_init(void);
/* Writes the device's name (NUL-terminated, truncated to capacity). */
BP_MPS_API int32_t bp_mps_device_name(char *out, int32_t capacity);
/*
 * Device facts into out[4]: recommended working-set bytes, unified memory (0/1),
 * bfloat16 support (0/1), native scaled dot-product attention (0/1).
 */
BP_MPS_API int32_t bp_mps_device_info(uint64_t *out);
/* macOS product version into out[3] (major, minor, patch); BP_MPS_E_UNSUPPORTED off macOS. */
BP_MPS_API int32_t bp_mps_os_version(int32_t *out);
/* Caps the bytes held by live buffers (default 1.7 x the working set; 0: no cap). */
BP_MPS_API int32_t bp_mps_set_memory_limit(uint64_t bytes);
/* Bytes held by live buffers into out[0], the cap into out[1], live buffers into out[2]. */
BP_MPS_API int32_t bp_mps_memory_stats(uint64_t *out);

BP_MPS_API int32_t bp_mps_buffer_alloc(uint64_t bytes, uint64_t *handle_out);
BP_MPS_API int32_t bp_mps_buffer_free(uint64_t handle);
BP_MPS_API int32_t bp_mps_buffer_write(uint64_t handle, uint64_t offset, const void *src, uint64_t bytes);
/* Waits for the device's queued work first. */
BP_MPS_API int32_t bp_mps_buffer_read(uint64_t handle, uint64_t offset, void *dst, uint64_t bytes);
BP_MPS_API int32_t bp_mps_buffer_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                           uint64_t bytes);
BP_MPS_API int32_t bp_mps_synchronize(void);

/*
 * dst[i] = src[offset + sum(index_d * strides[d])] for every row-major index of `shape`
 * (rank <= BP_MPS_MAX_RANK, offset and strides in elements, strides >= 0).
 */
BP_MPS_API int32_t bp_mps_strided_copy(int32_t elem_bytes, uint64_t src, int64_t offset, int32_t rank,
                            const int64_t *shape, const int64_t *strides, uint64_t dst);
/* C[batch, m, n] = A[batch|1, m, k] x B[batch|1, k, n]; a_batched/b_batched: 0 broadcasts. */
BP_MPS_API int32_t bp_mps_matmul(int32_t dtype, uint64_t a, uint64_t b, uint64_t c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, int32_t a_batched, int32_t b_batched);
/*
 * NCHW conv2d. geometry[16]: n, c, h, w, out_channels, kh, kw, stride_h, stride_w, pad_top,
 * pad_left, dilation_h, dilation_w, groups, out_h, out_w. bias may be 0 (none).
 */
BP_MPS_API int32_t bp_mps_conv2d(int32_t dtype, uint64_t x, uint64_t weight, uint64_t bias, uint64_t y,
                      const int64_t *geometry);
/* Softmax (or log-softmax) of x viewed as [outer, dim, inner] along dim. */
BP_MPS_API int32_t bp_mps_softmax(int32_t dtype, uint64_t x, uint64_t y, int64_t outer, int64_t dim,
                       int64_t inner, int32_t log);
/*
 * y = softmax(q k^T * scale + mask) v. shape[7]: batch, heads_q, heads_kv, L, S, E, Ev
 * (q [batch, heads_q, L, E], k [batch, heads_kv, S, E], v [batch, heads_kv, S, Ev],
 * y [batch, heads_q, L, Ev]); the mask, when given, is [batch, heads_q, L, S] (bool as one
 * byte per element, or additive in dtype).
 */
BP_MPS_API int32_t bp_mps_sdpa(int32_t dtype, uint64_t q, uint64_t k, uint64_t v, uint64_t mask,
                    int32_t mask_kind, uint64_t y, const int64_t *shape, double scale);
/*
 * Element-wise op over a shape of `rank` dims: y[out_shape] = a op b, a and b broadcast
 * (their shapes are given padded to rank, 1 where they broadcast). Unary ops ignore b.
 */
BP_MPS_API int32_t bp_mps_elementwise(int32_t op, int32_t dtype, uint64_t a, uint64_t b, uint64_t y,
                           int32_t rank, const int64_t *a_shape, const int64_t *b_shape,
                           const int64_t *out_shape);

#ifdef __cplusplus
}
#endif
#endif
