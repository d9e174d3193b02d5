/*
 * The half of the helper every implementation shares: the error message, the buffer table
 * (handles with generations, so a freed handle is caught), the memory cap and statistics,
 * and the argument checks of every entry point. Nothing here touches Metal.
 */
#include "bp_mps_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[512] = "";
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int32_t bp_fail(int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return code;
}

int32_t bp_dtype_bytes(int32_t dtype) { return dtype == BP_MPS_F32 ? 4 : 2; }

/* ---- the buffer table ---- */

typedef struct {
  void *native;
  uint64_t bytes;
  uint32_t generation; /* odd while live */
} slot_t;

static slot_t *slots;
static uint32_t slot_count;
static uint32_t free_hint;
static uint64_t held_bytes, live_buffers, memory_cap;
static int initialized;

static uint64_t handle_of(uint32_t index) {
  return ((uint64_t)slots[index].generation << 32) | (uint64_t)(index + 1);
}

/* The live slot a handle names, or NULL with the error set. */
static slot_t *lookup(uint64_t handle, const char *what, int32_t *status) {
  uint32_t index = (uint32_t)(handle & 0xffffffffu);
  uint32_t generation = (uint32_t)(handle >> 32);
  if (index == 0 || index > slot_count || (generation & 1u) == 0) {
    *status = bp_fail(BP_MPS_E_INVALID_ARGUMENT, "%s: 0x%llx is not a buffer handle", what,
                      (unsigned long long)handle);
    return NULL;
  }
  slot_t *s = &slots[index - 1];
  if (s->generation != generation) {
    *status = bp_fail(BP_MPS_E_FREED_BUFFER, "%s: buffer 0x%llx was freed", what,
                      (unsigned long long)handle);
    return NULL;
  }
  return s;
}

/* lookup() plus: the buffer holds at least `bytes`. */
static void *operand(uint64_t handle, uint64_t bytes, const char *what, int32_t *status) {
  slot_t *s = lookup(handle, what, status);
  if (!s) return NULL;
  if (s->bytes < bytes) {
    *status = bp_fail(BP_MPS_E_OUT_OF_RANGE, "%s: needs %llu bytes, the buffer has %llu", what,
                      (unsigned long long)bytes, (unsigned long long)s->bytes);
    return NULL;
  }
  return s->native;
}

/* Product of n dims (each >= 0) times elem, or -1 past 2^52 (no op is that large). */
static int64_t extent(const int64_t *dims, int n, int64_t elem) {
  int64_t total = elem;
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] != 0 && total > (((int64_t)1) << 52) / dims[i]) return -1;
    total *= dims[i];
  }
  return total;
}

#define ENTER()                                                                                \
  pthread_mutex_lock(&lock);                                                                   \
  int32_t status = BP_MPS_OK;                                                                  \
  if (!initialized) {                                                                          \
    status = bp_fail(BP_MPS_E_NO_DEVICE, "no MPS device: bp_mps_init has not succeeded");      \
    goto done;                                                                                 \
  }
#define LEAVE()                                                                                \
  done:                                                                                        \
  pthread_mutex_unlock(&lock);                                                                 \
  return status
#define CHECK(cond, code, ...)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      status = bp_fail(code, __VA_ARGS__);                                                     \
      goto done;                                                                               \
    }                                                                                          \
  } while (0)
#define OPERAND(var, handle, bytes, what)                                                      \
  void *var = operand(handle, (uint64_t)(bytes), what, &status);                               \
  if (!var) goto done

/* No buffer, offset or copy is larger (Metal's own limits are far below). */
#define MAX_BYTES (((uint64_t)1) << 48)
/* No element index is larger: extent() and the strided walk stay below it. */
#define MAX_ELEMENTS (((int64_t)1) << 52)

static int valid_dtype(int32_t dtype) { return dtype >= BP_MPS_F32 && dtype <= BP_MPS_BF16; }

/* ---- entry points ---- */

int32_t bp_mps_abi_version(void) { return BP_MPS_ABI_VERSION; }
const char *bp_mps_implementation(void) { return impl_name(); }
const char *bp_mps_last_error(void) { return last_error; }

int32_t bp_mps_init(void) {
  pthread_mutex_lock(&lock);
  int32_t status = initialized ? BP_MPS_OK : impl_init();
  if (status == BP_MPS_OK && !initialized) {
    uint64_t info[4];
    /* PyTorch's default high watermark: 1.7 x Metal's recommended working set. */
    if (impl_device_info(info) == BP_MPS_OK) memory_cap = info[0] / 10 * 17;
    initialized = 1;
  }
  pthread_mutex_unlock(&lock);
  return status;
}

int32_t bp_mps_device_name(char *out, int32_t capacity) {
  ENTER();
  CHECK(out && capacity > 0, BP_MPS_E_INVALID_ARGUMENT, "device_name: no output buffer");
  status = impl_device_name(out, (size_t)capacity);
  LEAVE();
}

int32_t bp_mps_device_info(uint64_t *out) {
  ENTER();
  CHECK(out, BP_MPS_E_INVALID_ARGUMENT, "device_info: no output buffer");
  status = impl_device_info(out);
  LEAVE();
}

int32_t bp_mps_set_memory_limit(uint64_t bytes) {
  ENTER();
  memory_cap = bytes; /* 0: no cap beyond what Metal refuses */
  LEAVE();
}

int32_t bp_mps_memory_stats(uint64_t *out) {
  ENTER();
  CHECK(out, BP_MPS_E_INVALID_ARGUMENT, "memory_stats: no output buffer");
  out[0] = held_bytes;
  out[1] = memory_cap;
  out[2] = live_buffers;
  LEAVE();
}

static int32_t grow_table(void) {
  uint32_t n = slot_count ? slot_count * 2 : 64;
  slot_t *grown = realloc(slots, (size_t)n * sizeof(slot_t));
  if (!grown) return bp_fail(BP_MPS_E_OUT_OF_MEMORY, "buffer table: out of host memory");
  memset(grown + slot_count, 0, (size_t)(n - slot_count) * sizeof(slot_t));
  slots = grown;
  free_hint = slot_count;
  slot_count = n;
  return BP_MPS_OK;
}

int32_t bp_mps_buffer_alloc(uint64_t bytes, uint64_t *handle_out) {
  ENTER();
  CHECK(handle_out, BP_MPS_E_INVALID_ARGUMENT, "buffer_alloc: no output handle");
  CHECK(bytes <= MAX_BYTES, BP_MPS_E_INVALID_ARGUMENT,
        "buffer_alloc: %llu bytes is not a buffer size", (unsigned long long)bytes);
  CHECK(memory_cap == 0 || held_bytes + bytes <= memory_cap, BP_MPS_E_OUT_OF_MEMORY,
        "MPS out of memory: %llu bytes held, %llu more asked, the cap is %llu "
        "(mps.setPerProcessMemoryFraction raises it)",
        (unsigned long long)held_bytes, (unsigned long long)bytes,
        (unsigned long long)memory_cap);
  uint32_t index = free_hint;
  while (index < slot_count && (slots[index].generation & 1u)) index++;
  if (index >= slot_count) {
    for (index = 0; index < slot_count && (slots[index].generation & 1u); index++) {
    }
    if (index >= slot_count) {
      status = grow_table();
      if (status) goto done;
      index = free_hint;
    }
  }
  void *native = NULL;
  /* Metal refuses empty buffers: every buffer has at least 16 bytes. */
  status = impl_alloc(bytes < 16 ? 16 : bytes, &native);
  if (status) goto done;
  slots[index].native = native;
  slots[index].bytes = bytes;
  slots[index].generation++;
  held_bytes += bytes;
  live_buffers++;
  free_hint = index + 1;
  *handle_out = handle_of(index);
  LEAVE();
}

int32_t bp_mps_buffer_free(uint64_t handle) {
  ENTER();
  slot_t *s = lookup(handle, "buffer_free", &status);
  if (!s) goto done;
  impl_free(s->native);
  held_bytes -= s->bytes;
  live_buffers--;
  s->native = NULL;
  s->generation++;
  if ((uint32_t)(s - slots) < free_hint) free_hint = (uint32_t)(s - slots);
  LEAVE();
}

int32_t bp_mps_buffer_write(uint64_t handle, uint64_t offset, const void *src, uint64_t bytes) {
  ENTER();
  CHECK(src || bytes == 0, BP_MPS_E_INVALID_ARGUMENT, "buffer_write: no source");
  CHECK(offset <= MAX_BYTES && bytes <= MAX_BYTES, BP_MPS_E_OUT_OF_RANGE,
        "buffer_write: offset %llu, %llu bytes", (unsigned long long)offset,
        (unsigned long long)bytes);
  OPERAND(dst, handle, offset + bytes, "buffer_write");
  status = impl_synchronize();
  if (status) goto done;
  if (bytes) memcpy((char *)impl_contents(dst) + offset, src, (size_t)bytes);
  LEAVE();
}

int32_t bp_mps_buffer_read(uint64_t handle, uint64_t offset, void *dst, uint64_t bytes) {
  ENTER();
  CHECK(dst || bytes == 0, BP_MPS_E_INVALID_ARGUMENT, "buffer_read: no destination");
  CHECK(offset <= MAX_BYTES && bytes <= MAX_BYTES, BP_MPS_E_OUT_OF_RANGE,
        "buffer_read: offset %llu, %llu bytes", (unsigned long long)offset,
        (unsigned long long)bytes);
  OPERAND(src, handle, offset + bytes, "buffer_read");
  status = impl_synchronize();
  if (status) goto done;
  if (bytes) memcpy(dst, (const char *)impl_contents(src) + offset, (size_t)bytes);
  LEAVE();
}

int32_t bp_mps_buffer_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                           uint64_t bytes) {
  ENTER();
  CHECK(src_offset <= MAX_BYTES && dst_offset <= MAX_BYTES && bytes <= MAX_BYTES,
        BP_MPS_E_OUT_OF_RANGE, "buffer_copy: offsets %llu, %llu, %llu bytes",
        (unsigned long long)src_offset, (unsigned long long)dst_offset,
        (unsigned long long)bytes);
  OPERAND(s, src, src_offset + bytes, "buffer_copy source");
  OPERAND(d, dst, dst_offset + bytes, "buffer_copy destination");
  if (bytes) status = impl_copy(s, src_offset, d, dst_offset, bytes);
  LEAVE();
}

int32_t bp_mps_synchronize(void) {
  ENTER();
  status = impl_synchronize();
  LEAVE();
}

int32_t bp_mps_strided_copy(int32_t elem_bytes, uint64_t src, int64_t offset, int32_t rank,
                            const int64_t *shape, const int64_t *strides, uint64_t dst) {
  ENTER();
  CHECK(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8,
        BP_MPS_E_INVALID_ARGUMENT, "strided_copy: element size %d", elem_bytes);
  CHECK(rank >= 0 && rank <= BP_MPS_MAX_RANK && (rank == 0 || (shape && strides)),
        BP_MPS_E_INVALID_ARGUMENT, "strided_copy: rank %d (at most %d)", rank, BP_MPS_MAX_RANK);
  int64_t count = extent(shape, rank, 1);
  CHECK(count >= 0 && offset >= 0 && offset < MAX_ELEMENTS, BP_MPS_E_INVALID_ARGUMENT,
        "strided_copy: bad shape or offset");
  /* The last element read, kept below 2^52 step by step (no product may overflow). */
  int64_t last = offset;
  for (int i = 0; i < rank; i++) {
    CHECK(strides[i] >= 0 && strides[i] < (((int64_t)1) << 40), BP_MPS_E_INVALID_ARGUMENT,
          "strided_copy: stride %lld", (long long)strides[i]);
    if (shape[i] < 2 || strides[i] == 0) continue;
    CHECK(shape[i] - 1 <= (MAX_ELEMENTS - last) / strides[i], BP_MPS_E_OUT_OF_RANGE,
          "strided_copy: dim %d (%lld x stride %lld) reaches past 2^52 elements", i,
          (long long)shape[i], (long long)strides[i]);
    last += (shape[i] - 1) * strides[i];
  }
  OPERAND(d, dst, count * elem_bytes, "strided_copy destination");
  OPERAND(s, src, count ? (last + 1) * elem_bytes : 0, "strided_copy source");
  if (count) status = impl_strided_copy(elem_bytes, s, offset, rank, shape, strides, d);
  LEAVE();
}

int32_t bp_mps_matmul(int32_t dtype, uint64_t a, uint64_t b, uint64_t c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, int32_t a_batched, int32_t b_batched) {
  ENTER();
  CHECK(valid_dtype(dtype), BP_MPS_E_INVALID_ARGUMENT, "matmul: dtype %d", dtype);
  int64_t e = bp_dtype_bytes(dtype);
  int64_t dims_a[3] = {a_batched ? batch : 1, m, k}, dims_b[3] = {b_batched ? batch : 1, k, n};
  int64_t dims_c[3] = {batch, m, n};
  int64_t ba = extent(dims_a, 3, e), bb = extent(dims_b, 3, e), bc = extent(dims_c, 3, e);
  CHECK(ba >= 0 && bb >= 0 && bc >= 0, BP_MPS_E_INVALID_ARGUMENT,
        "matmul: batch %lld, m %lld, n %lld, k %lld", (long long)batch, (long long)m,
        (long long)n, (long long)k);
  OPERAND(pa, a, ba, "matmul a");
  OPERAND(pb, b, bb, "matmul b");
  OPERAND(pc, c, bc, "matmul c");
  if (bc) status = impl_matmul(dtype, pa, pb, pc, batch, m, n, k, a_batched, b_batched);
  LEAVE();
}

int32_t bp_mps_conv2d(int32_t dtype, uint64_t x, uint64_t weight, uint64_t bias, uint64_t y,
                      const int64_t *g) {
  ENTER();
  CHECK(valid_dtype(dtype) && g, BP_MPS_E_INVALID_ARGUMENT, "conv2d: dtype %d", dtype);
  for (int i = 0; i < 16; i++)
    CHECK(g[i] >= 0 && g[i] < (((int64_t)1) << 31), BP_MPS_E_INVALID_ARGUMENT,
          "conv2d: geometry[%d] = %lld", i, (long long)g[i]);
  int64_t n = g[0], c = g[1], h = g[2], w = g[3], o = g[4], kh = g[5], kw = g[6];
  int64_t groups = g[13], oh = g[14], ow = g[15];
  CHECK(groups >= 1 && c % groups == 0 && o % groups == 0 && g[7] >= 1 && g[8] >= 1 &&
            g[11] >= 1 && g[12] >= 1 && kh >= 1 && kw >= 1,
        BP_MPS_E_INVALID_ARGUMENT, "conv2d: inconsistent geometry");
  /* The output size must follow from the input, kernel and parameters. */
  CHECK((oh - 1) * g[7] + g[11] * (kh - 1) + 1 <= h + 2 * g[9] + g[7] &&
            (ow - 1) * g[8] + g[12] * (kw - 1) + 1 <= w + 2 * g[10] + g[8],
        BP_MPS_E_INVALID_ARGUMENT, "conv2d: output %lldx%lld does not fit the input",
        (long long)oh, (long long)ow);
  int64_t e = bp_dtype_bytes(dtype);
  int64_t dx[4] = {n, c, h, w}, dw[4] = {o, c / groups, kh, kw}, dy[4] = {n, o, oh, ow};
  OPERAND(px, x, extent(dx, 4, e), "conv2d input");
  OPERAND(pw, weight, extent(dw, 4, e), "conv2d weight");
  void *pbias = NULL;
  if (bias) {
    pbias = operand(bias, (uint64_t)(o * e), "conv2d bias", &status);
    if (!pbias) goto done;
  }
  OPERAND(py, y, extent(dy, 4, e), "conv2d output");
  if (n && o && oh && ow) status = impl_conv2d(dtype, px, pw, pbias, py, g);
  LEAVE();
}

int32_t bp_mps_softmax(int32_t dtype, uint64_t x, uint64_t y, int64_t outer, int64_t dim,
                       int64_t inner, int32_t log) {
  ENTER();
  CHECK(valid_dtype(dtype), BP_MPS_E_INVALID_ARGUMENT, "softmax: dtype %d", dtype);
  int64_t dims[3] = {outer, dim, inner};
  int64_t bytes = extent(dims, 3, bp_dtype_bytes(dtype));
  CHECK(bytes >= 0, BP_MPS_E_INVALID_ARGUMENT, "softmax: bad shape");
  OPERAND(px, x, bytes, "softmax input");
  OPERAND(py, y, bytes, "softmax output");
  if (bytes) status = impl_softmax(dtype, px, py, outer, dim, inner, log != 0);
  LEAVE();
}

int32_t bp_mps_sdpa(int32_t dtype, uint64_t q, uint64_t k, uint64_t v, uint64_t mask,
                    int32_t mask_kind, uint64_t y, const int64_t *s, double scale) {
  ENTER();
  CHECK(valid_dtype(dtype) && s, BP_MPS_E_INVALID_ARGUMENT, "sdpa: dtype %d", dtype);
  CHECK(mask_kind >= BP_MPS_MASK_NONE && mask_kind <= BP_MPS_MASK_CAUSAL &&
            ((mask_kind == BP_MPS_MASK_BOOL || mask_kind == BP_MPS_MASK_ADDITIVE) == (mask != 0)),
        BP_MPS_E_INVALID_ARGUMENT, "sdpa: mask kind %d with%s a mask buffer", mask_kind,
        mask ? "" : "out");
  for (int i = 0; i < 7; i++)
    CHECK(s[i] >= 0 && s[i] < (((int64_t)1) << 31), BP_MPS_E_INVALID_ARGUMENT,
          "sdpa: shape[%d] = %lld", i, (long long)s[i]);
  CHECK(s[2] >= 1 && s[1] % s[2] == 0, BP_MPS_E_INVALID_ARGUMENT,
        "sdpa: %lld query heads are not a multiple of %lld key heads", (long long)s[1],
        (long long)s[2]);
  CHECK(scale == scale, BP_MPS_E_INVALID_ARGUMENT, "sdpa: scale is NaN");
  int64_t e = bp_dtype_bytes(dtype);
  int64_t dq[4] = {s[0], s[1], s[3], s[5]}, dk[4] = {s[0], s[2], s[4], s[5]};
  int64_t dv[4] = {s[0], s[2], s[4], s[6]}, dy[4] = {s[0], s[1], s[3], s[6]};
  int64_t dm[4] = {s[0], s[1], s[3], s[4]};
  OPERAND(pq, q, extent(dq, 4, e), "sdpa query");
  OPERAND(pk, k, extent(dk, 4, e), "sdpa key");
  OPERAND(pv, v, extent(dv, 4, e), "sdpa value");
  void *pm = NULL;
  if (mask) {
    pm = operand(mask, (uint64_t)extent(dm, 4, mask_kind == BP_MPS_MASK_BOOL ? 1 : e),
                 "sdpa mask", &status);
    if (!pm) goto done;
  }
  OPERAND(py, y, extent(dy, 4, e), "sdpa output");
  if (extent(dy, 4, 1) > 0) status = impl_sdpa(dtype, pq, pk, pv, pm, mask_kind, py, s, scale);
  LEAVE();
}

int32_t bp_mps_elementwise(int32_t op, int32_t dtype, uint64_t a, uint64_t b, uint64_t y,
                           int32_t rank, const int64_t *a_shape, const int64_t *b_shape,
                           const int64_t *out_shape) {
  ENTER();
  CHECK(op >= BP_MPS_ADD && op <= BP_MPS_GELU_TANH && valid_dtype(dtype),
        BP_MPS_E_INVALID_ARGUMENT, "elementwise: op %d, dtype %d", op, dtype);
  int binary = op == BP_MPS_ADD || op == BP_MPS_MUL;
  CHECK(rank >= 0 && rank <= BP_MPS_MAX_RANK && (rank == 0 || (a_shape && out_shape)) &&
            (!binary || rank == 0 || b_shape),
        BP_MPS_E_INVALID_ARGUMENT, "elementwise: rank %d (at most %d)", rank, BP_MPS_MAX_RANK);
  for (int i = 0; i < rank; i++) {
    CHECK(a_shape[i] == out_shape[i] || a_shape[i] == 1, BP_MPS_E_INVALID_ARGUMENT,
          "elementwise: a's dim %d (%lld) does not broadcast to %lld", i, (long long)a_shape[i],
          (long long)out_shape[i]);
    CHECK(!binary || b_shape[i] == out_shape[i] || b_shape[i] == 1, BP_MPS_E_INVALID_ARGUMENT,
          "elementwise: b's dim %d (%lld) does not broadcast to %lld", i, (long long)b_shape[i],
          (long long)out_shape[i]);
  }
  int64_t e = bp_dtype_bytes(dtype), by = extent(out_shape, rank, e);
  CHECK(by >= 0, BP_MPS_E_INVALID_ARGUMENT, "elementwise: bad shape");
  OPERAND(pa, a, extent(a_shape, rank, e), "elementwise a");
  void *pb = NULL;
  if (binary) {
    pb = operand(b, (uint64_t)extent(b_shape, rank, e), "elementwise b", &status);
    if (!pb) goto done;
  }
  OPERAND(py, y, by, "elementwise output");
  if (by) status = impl_elementwise(op, dtype, pa, pb, py, rank, a_shape, b_shape, out_shape);
  LEAVE();
}

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

int32_t bp_mps_os_version(int32_t *out) {
  if (!out) return bp_fail(BP_MPS_E_INVALID_ARGUMENT, "os_version: no output buffer");
  out[0] = out[1] = out[2] = 0;
#ifdef __APPLE__
  char text[32] = "";
  size_t len = sizeof text;
  if (sysctlbyname("kern.osproductversion", text, &len, NULL, 0) != 0)
    return bp_fail(BP_MPS_E_UNSUPPORTED, "sysctl kern.osproductversion failed");
  sscanf(text, "%d.%d.%d", &out[0], &out[1], &out[2]);
  return BP_MPS_OK;
#else
  return bp_fail(BP_MPS_E_UNSUPPORTED, "not macOS: there is no macOS version");
#endif
}
