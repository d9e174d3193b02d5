/*
 * What an implementation (Metal, or the CPU stand-in) provides to bp_mps_common.c. The
 * common file has already checked every argument: handles are live, shapes are in range
 * and every buffer is large enough, so these functions only compute. Each returns a status
 * and sets the message through bp_fail() on error.
 */
#ifndef BP_MPS_IMPL_H
#define BP_MPS_IMPL_H

#include "bp_mps.h"
#include <stddef.h>

/* Sets the thread's error message and returns `code`. */
int32_t bp_fail(int32_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Bytes per element of an op dtype (4, 2, 2). */
int32_t bp_dtype_bytes(int32_t dtype);

const char *impl_name(void);
int32_t impl_init(void);
int32_t impl_device_name(char *out, size_t capacity);
/* Same layout as bp_mps_device_info; out[0] is also the default memory cap. */
int32_t impl_device_info(uint64_t *out);
int32_t impl_alloc(uint64_t bytes, void **native);
void impl_free(void *native);
/* The CPU address of a buffer (shared storage); valid after impl_synchronize. */
void *impl_contents(void *native);
int32_t impl_synchronize(void);
int32_t impl_copy(void *src, uint64_t src_offset, void *dst, uint64_t dst_offset, uint64_t bytes);
int32_t impl_strided_copy(int32_t elem_bytes, void *src, int64_t offset, int32_t rank,
                          const int64_t *shape, const int64_t *strides, void *dst);
int32_t impl_matmul(int32_t dtype, void *a, void *b, void *c, int64_t batch, int64_t m,
                    int64_t n, int64_t k, int32_t a_batched, int32_t b_batched);
int32_t impl_conv2d(int32_t dtype, void *x, void *w, void *bias, void *y, const int64_t *g);
int32_t impl_softmax(int32_t dtype, void *x, void *y, int64_t outer, int64_t dim, int64_t inner,
                     int32_t log);
int32_t impl_sdpa(int32_t dtype, void *q, void *k, void *v, void *mask, int32_t mask_kind,
                  void *y, const int64_t *shape, double scale);
int32_t impl_elementwise(int32_t op, int32_t dtype, void *a, void *b, void *y, int32_t rank,
                         const int64_t *a_shape, const int64_t *b_shape,
                         const int64_t *out_shape);

#endif
