/*
 * Every entry point of the helper's C ABI, called with good and bad arguments, built
 * against the CPU stand-in so AddressSanitizer, UBSan and Valgrind watch each path:
 * a buffer overrun, a use after free or an integer overflow in an argument check fails
 * here, in C, before any runtime's FFI is involved. Results are checked too (float32
 * against a double reference), so a path that silently does nothing fails as well.
 * Exit status: 0 when every check held; the failed checks are printed.
 */
#include "bp_mps.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                                           \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                      \
      failures++;                                                                              \
    }                                                                                          \
  } while (0)

#define EXPECT_STATUS(call, want)                                                              \
  do {                                                                                         \
    int32_t got_ = (call);                                                                     \
    if (got_ != (want)) {                                                                      \
      fprintf(stderr, "%s:%d: %s gave %d, expected %d (%s)\n", __FILE__, __LINE__, #call,      \
              got_, (int)(want), bp_mps_last_error());                                         \
      failures++;                                                                              \
    }                                                                                          \
  } while (0)

static uint64_t seed = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1): never zeros on purpose, so a kernel that writes nothing is caught. */
static float next_value(void) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(seed >> 11) / 4503599627370496.0 - 1.0);
}

static uint64_t alloc_bytes(uint64_t bytes) {
  uint64_t h = 0;
  EXPECT_STATUS(bp_mps_buffer_alloc(bytes, &h), BP_MPS_OK);
  return h;
}

/* A float32 buffer of n random values; the values also into host[] when given. */
static uint64_t random_f32(size_t n, float *host) {
  float *v = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) v[i] = next_value();
  uint64_t h = alloc_bytes(n * 4);
  EXPECT_STATUS(bp_mps_buffer_write(h, 0, v, n * 4), BP_MPS_OK);
  if (host) memcpy(host, v, n * sizeof(float));
  free(v);
  return h;
}

/* A buffer of n 16-bit random values (half or bfloat16 bit patterns of small numbers). */
static uint64_t random_u16(size_t n) {
  uint16_t *v = malloc((n ? n : 1) * 2);
  for (size_t i = 0; i < n; i++) v[i] = (uint16_t)(0x3800 + (int)(next_value() * 512));
  uint64_t h = alloc_bytes(n * 2);
  EXPECT_STATUS(bp_mps_buffer_write(h, 0, v, n * 2), BP_MPS_OK);
  free(v);
  return h;
}

/* Reads n floats, poisoned with NaN first so that an unwritten element shows. */
static void read_f32(uint64_t h, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = NAN;
  EXPECT_STATUS(bp_mps_buffer_read(h, 0, out, n * 4), BP_MPS_OK);
}

static void expect_close(const float *got, const double *want, size_t n, double tol) {
  for (size_t i = 0; i < n; i++) {
    if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
      fprintf(stderr, "element %zu: %.9g, expected %.9g\n", i, got[i], want[i]);
      failures++;
      return;
    }
  }
}

static void check_before_init(void) {
  uint64_t h;
  EXPECT_STATUS(bp_mps_buffer_alloc(16, &h), BP_MPS_E_NO_DEVICE);
  EXPECT(strstr(bp_mps_last_error(), "bp_mps_init") != NULL);
  EXPECT(bp_mps_abi_version() == BP_MPS_ABI_VERSION);
  EXPECT(strcmp(bp_mps_implementation(), "cpu-stand-in") == 0);
}

static void check_device(void) {
  EXPECT_STATUS(bp_mps_init(), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_init(), BP_MPS_OK); /* idempotent */
  char name[256], one[1] = {'x'};
  EXPECT_STATUS(bp_mps_device_name(name, sizeof name), BP_MPS_OK);
  EXPECT(strlen(name) > 0 && strlen(name) < sizeof name);
  EXPECT_STATUS(bp_mps_device_name(one, 1), BP_MPS_OK);
  EXPECT(one[0] == 0);
  EXPECT_STATUS(bp_mps_device_name(NULL, 8), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_device_name(name, 0), BP_MPS_E_INVALID_ARGUMENT);
  uint64_t info[4];
  EXPECT_STATUS(bp_mps_device_info(info), BP_MPS_OK);
  EXPECT(info[0] > 0 && info[1] == 1);
  EXPECT_STATUS(bp_mps_device_info(NULL), BP_MPS_E_INVALID_ARGUMENT);
  int32_t os[3];
  EXPECT_STATUS(bp_mps_os_version(os), BP_MPS_E_UNSUPPORTED);
  EXPECT_STATUS(bp_mps_os_version(NULL), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_memory_stats(NULL), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_synchronize(), BP_MPS_OK);
}

static void check_buffers(void) {
  uint64_t h;
  EXPECT_STATUS(bp_mps_buffer_alloc(16, NULL), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_alloc((1ull << 48) + 1, &h), BP_MPS_E_INVALID_ARGUMENT);
  uint64_t empty = alloc_bytes(0);
  uint64_t a = alloc_bytes(40), b = alloc_bytes(40);
  unsigned char in[40], out[40];
  for (int i = 0; i < 40; i++) in[i] = (unsigned char)(i * 7 + 1);
  EXPECT_STATUS(bp_mps_buffer_write(a, 0, in, 40), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_write(a, 8, in, 32), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_read(a, 8, out, 32), BP_MPS_OK);
  EXPECT(memcmp(out, in, 32) == 0);
  EXPECT_STATUS(bp_mps_buffer_write(empty, 0, NULL, 0), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_read(empty, 0, NULL, 0), BP_MPS_OK);
  /* Past the end, by one byte and by offsets whose sum with the size wraps around. */
  EXPECT_STATUS(bp_mps_buffer_write(a, 1, in, 40), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_read(a, 33, out, 8), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_write(a, 16, in, UINT64_MAX - 7), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_read(a, 16, out, UINT64_MAX - 7), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_read(a, UINT64_MAX, out, 1), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_write(a, 0, NULL, 4), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_read(a, 0, NULL, 4), BP_MPS_E_INVALID_ARGUMENT);
  /* Copies: between buffers, overlapping within one, and past either end. */
  EXPECT_STATUS(bp_mps_buffer_copy(a, 8, b, 0, 32), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_read(b, 0, out, 32), BP_MPS_OK);
  EXPECT(memcmp(out, in, 32) == 0);
  EXPECT_STATUS(bp_mps_buffer_copy(a, 0, a, 4, 36), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_copy(a, 0, b, 1, 40), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_copy(a, 8, b, 8, UINT64_MAX - 3), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_buffer_copy(a, UINT64_MAX, b, 0, 2), BP_MPS_E_OUT_OF_RANGE);
  /* Handles: freed, freed twice, never made. */
  EXPECT_STATUS(bp_mps_buffer_free(b), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(b), BP_MPS_E_FREED_BUFFER);
  EXPECT_STATUS(bp_mps_buffer_read(b, 0, out, 4), BP_MPS_E_FREED_BUFFER);
  EXPECT_STATUS(bp_mps_buffer_copy(a, 0, b, 0, 4), BP_MPS_E_FREED_BUFFER);
  uint64_t reused = alloc_bytes(8); /* may take b's slot: b must stay dead */
  EXPECT_STATUS(bp_mps_buffer_write(b, 0, in, 4), BP_MPS_E_FREED_BUFFER);
  EXPECT_STATUS(bp_mps_buffer_free(0), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_free(0xffffffffull), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_free(UINT64_MAX), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_free(a & 0xffffffffull), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_buffer_free(reused), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(a), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(empty), BP_MPS_OK);
}

static void check_memory_cap_and_table(void) {
  uint64_t stats[3], h;
  EXPECT_STATUS(bp_mps_set_memory_limit(1000), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_alloc(1001, &h), BP_MPS_E_OUT_OF_MEMORY);
  EXPECT(strstr(bp_mps_last_error(), "cap") != NULL);
  EXPECT_STATUS(bp_mps_set_memory_limit(0), BP_MPS_OK);
  /* More buffers than the first table holds (64), freed out of order. */
  enum { N = 300 };
  uint64_t hs[N];
  for (int i = 0; i < N; i++) hs[i] = alloc_bytes((uint64_t)(i % 7) * 8);
  EXPECT_STATUS(bp_mps_memory_stats(stats), BP_MPS_OK);
  EXPECT(stats[2] == N);
  for (int i = 0; i < N; i += 2) EXPECT_STATUS(bp_mps_buffer_free(hs[i]), BP_MPS_OK);
  for (int i = 1; i < N; i += 2) EXPECT_STATUS(bp_mps_buffer_free(hs[i]), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_memory_stats(stats), BP_MPS_OK);
  EXPECT(stats[0] == 0 && stats[2] == 0);
}

static void check_strided_copy(void) {
  enum { R = 3, C = 5 };
  float host[R * C], got[R * C];
  uint64_t src = random_f32(R * C, host), dst = alloc_bytes(R * C * 4);
  int64_t shape[2] = {C, R}, strides[2] = {1, C}; /* the transpose */
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 2, shape, strides, dst), BP_MPS_OK);
  read_f32(dst, got, R * C);
  for (int i = 0; i < C; i++)
    for (int j = 0; j < R; j++) EXPECT(got[i * R + j] == host[j * C + i]);
  int64_t one[1] = {4}, step[1] = {3};
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 2, 1, one, step, dst), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 0, NULL, NULL, dst), BP_MPS_OK); /* a scalar */
  int64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 9, big, big, dst), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_strided_copy(3, src, 0, 1, one, step, dst), BP_MPS_E_INVALID_ARGUMENT);
  int64_t negative[1] = {-1};
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 1, one, negative, dst),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_strided_copy(4, src, -1, 1, one, step, dst), BP_MPS_E_INVALID_ARGUMENT);
  int64_t far[1] = {6};
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 1, one, far, dst), BP_MPS_E_OUT_OF_RANGE);
  /* Dims whose reach (size - 1) x stride overflows 64 bits must be refused, not wrapped. */
  int64_t huge_shape[2] = {1ll << 30, 1ll << 20}, huge_strides[2] = {(1ll << 39) + 1, 1};
  EXPECT(bp_mps_strided_copy(4, src, 0, 2, huge_shape, huge_strides, dst) != BP_MPS_OK);
  int64_t wrap_shape[1] = {(1ll << 25) + 1}, wrap_strides[1] = {1ll << 39};
  EXPECT(bp_mps_strided_copy(1, src, 0, 1, wrap_shape, wrap_strides, dst) != BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(src), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_strided_copy(4, src, 0, 1, one, step, dst), BP_MPS_E_FREED_BUFFER);
  EXPECT_STATUS(bp_mps_buffer_free(dst), BP_MPS_OK);
}

static void check_matmul(void) {
  enum { B = 2, M = 3, N = 5, K = 7 };
  float a[B * M * K], b[K * N], c[B * M * N];
  double want[B * M * N];
  uint64_t ha = random_f32(B * M * K, a), hb = random_f32(K * N, b);
  uint64_t hc = alloc_bytes(B * M * N * 4);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, B, M, N, K, 1, 0), BP_MPS_OK);
  for (int z = 0; z < B; z++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double acc = 0;
        for (int p = 0; p < K; p++) acc += (double)a[(z * M + i) * K + p] * b[p * N + j];
        want[(z * M + i) * N + j] = acc;
      }
  read_f32(hc, c, B * M * N);
  expect_close(c, want, B * M * N, 1e-6);
  /* Half types run the same loops with 2-byte elements. */
  uint64_t a16 = random_u16(B * M * K), b16 = random_u16(K * N), c16 = alloc_bytes(B * M * N * 2);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F16, a16, b16, c16, B, M, N, K, 1, 0), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_BF16, a16, b16, c16, B, M, N, K, 1, 0), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, B, 0, N, K, 1, 0), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, B, M, N, K, 1, 1), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, B, M, N, K + 1, 1, 0),
                BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_matmul(7, ha, hb, hc, B, M, N, K, 1, 0), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, -1, M, N, K, 1, 0),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_matmul(BP_MPS_F32, ha, hb, hc, 1ll << 40, 1ll << 20, 1, 1, 1, 0),
                BP_MPS_E_INVALID_ARGUMENT);
  uint64_t all[] = {ha, hb, hc, a16, b16, c16};
  for (int i = 0; i < 6; i++) EXPECT_STATUS(bp_mps_buffer_free(all[i]), BP_MPS_OK);
}

static void check_conv2d(void) {
  /* n 2, c 4, 5x6 input, 6 outputs, 3x2 kernel, stride 2x1, pad 1x1, dilation 1x2, groups 2. */
  int64_t g[16] = {2, 4, 5, 6, 6, 3, 2, 2, 1, 1, 1, 1, 2, 2, 0, 0};
  g[14] = (5 + 2 - 1 * (3 - 1) - 1) / 2 + 1;
  g[15] = (6 + 2 - 2 * (2 - 1) - 1) / 1 + 1;
  int64_t n = g[0], c = g[1], h = g[2], w = g[3], o = g[4], kh = g[5], kw = g[6];
  int64_t oh = g[14], ow = g[15], cg = c / g[13], og = o / g[13];
  size_t nx = n * c * h * w, nw = o * cg * kh * kw, ny = n * o * oh * ow;
  float *x = malloc(nx * 4), *wt = malloc(nw * 4), bias[6], *y = malloc(ny * 4);
  double *want = malloc(ny * sizeof(double));
  uint64_t hx = random_f32(nx, x), hw = random_f32(nw, wt), hb = random_f32(o, bias);
  uint64_t hy = alloc_bytes(ny * 4);
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, g), BP_MPS_OK);
  for (int64_t b = 0; b < n; b++)
    for (int64_t oc = 0; oc < o; oc++)
      for (int64_t r = 0; r < oh; r++)
        for (int64_t s = 0; s < ow; s++) {
          double acc = bias[oc];
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t u = 0; u < kh; u++)
              for (int64_t v = 0; v < kw; v++) {
                int64_t hi = r * g[7] - g[9] + u * g[11], wi = s * g[8] - g[10] + v * g[12];
                if (hi < 0 || hi >= h || wi < 0 || wi >= w) continue;
                acc += (double)x[((b * c + (oc / og) * cg + ic) * h + hi) * w + wi] *
                       wt[((oc * cg + ic) * kh + u) * kw + v];
              }
          want[((b * o + oc) * oh + r) * ow + s] = acc;
        }
  read_f32(hy, y, ny);
  expect_close(y, want, ny, 1e-6);
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, 0, hy, g), BP_MPS_OK); /* no bias */
  int64_t bad[16];
  memcpy(bad, g, sizeof bad);
  bad[13] = 3; /* 4 channels in 3 groups */
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, bad), BP_MPS_E_INVALID_ARGUMENT);
  memcpy(bad, g, sizeof bad);
  bad[14] += 3; /* more output rows than the input gives */
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, bad), BP_MPS_E_INVALID_ARGUMENT);
  memcpy(bad, g, sizeof bad);
  bad[2] = -5;
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, bad), BP_MPS_E_INVALID_ARGUMENT);
  memcpy(bad, g, sizeof bad);
  bad[0] = 3; /* a batch the buffers do not hold */
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, bad), BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_conv2d(BP_MPS_F32, hx, hw, hb, hy, NULL), BP_MPS_E_INVALID_ARGUMENT);
  uint64_t all[] = {hx, hw, hb, hy};
  for (int i = 0; i < 4; i++) EXPECT_STATUS(bp_mps_buffer_free(all[i]), BP_MPS_OK);
  free(x), free(wt), free(y), free(want);
}

static void check_softmax(void) {
  enum { OUTER = 2, DIM = 7, INNER = 3, COUNT = OUTER * DIM * INNER };
  float x[COUNT], y[COUNT];
  uint64_t hx = random_f32(COUNT, x), hy = alloc_bytes(COUNT * 4);
  for (int log_form = 0; log_form < 2; log_form++) {
    EXPECT_STATUS(bp_mps_softmax(BP_MPS_F32, hx, hy, OUTER, DIM, INNER, log_form), BP_MPS_OK);
    read_f32(hy, y, COUNT);
    for (int a = 0; a < OUTER; a++)
      for (int b = 0; b < INNER; b++) {
        double sum = 0;
        for (int i = 0; i < DIM; i++) {
          double v = y[(a * DIM + i) * INNER + b];
          sum += log_form ? exp(v) : v;
        }
        EXPECT(fabs(sum - 1) < 1e-5);
      }
  }
  EXPECT_STATUS(bp_mps_softmax(BP_MPS_F32, hx, hy, OUTER, DIM + 1, INNER, 0),
                BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_softmax(BP_MPS_F32, hx, hy, -1, DIM, INNER, 0), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_softmax(BP_MPS_BF16, hx, hy, OUTER, DIM, INNER, 0), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(hx), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_buffer_free(hy), BP_MPS_OK);
}

static void check_sdpa(void) {
  /* batch 2, 4 query heads over 2 key heads, L 3, S 5, E 4, Ev 6. */
  int64_t s[7] = {2, 4, 2, 3, 5, 4, 6};
  size_t nq = 2 * 4 * 3 * 4, nk = 2 * 2 * 5 * 4, nv = 2 * 2 * 5 * 6, ny = 2 * 4 * 3 * 6;
  size_t nm = 2 * 4 * 3 * 5;
  float q[2 * 4 * 3 * 4], k[2 * 2 * 5 * 4], v[2 * 2 * 5 * 6], y[2 * 4 * 3 * 6];
  double want[2 * 4 * 3 * 6];
  uint64_t hq = random_f32(nq, q), hk = random_f32(nk, k), hv = random_f32(nv, v);
  uint64_t hy = alloc_bytes(ny * 4), additive = random_f32(nm, NULL);
  uint8_t keep[2 * 4 * 3 * 5];
  for (size_t i = 0; i < nm; i++) keep[i] = (uint8_t)(i % 3 != 0);
  for (int i = 0; i < 5; i++) keep[i] = 0; /* one fully masked row: zeros */
  uint64_t hbool = alloc_bytes(nm);
  EXPECT_STATUS(bp_mps_buffer_write(hbool, 0, keep, nm), BP_MPS_OK);
  double scale = 0.5;
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_NONE, hy, s, scale),
                BP_MPS_OK);
  for (int b = 0; b < 2; b++)
    for (int h = 0; h < 4; h++)
      for (int i = 0; i < 3; i++) {
        double sc[5], max = -INFINITY, sum = 0;
        for (int j = 0; j < 5; j++) {
          double dot = 0;
          for (int e = 0; e < 4; e++)
            dot += (double)q[((b * 4 + h) * 3 + i) * 4 + e] * k[((b * 2 + h / 2) * 5 + j) * 4 + e];
          sc[j] = dot * scale;
          if (sc[j] > max) max = sc[j];
        }
        for (int j = 0; j < 5; j++) sum += sc[j] = exp(sc[j] - max);
        for (int e = 0; e < 6; e++) {
          double acc = 0;
          for (int j = 0; j < 5; j++) acc += sc[j] / sum * v[((b * 2 + h / 2) * 5 + j) * 6 + e];
          want[((b * 4 + h) * 3 + i) * 6 + e] = acc;
        }
      }
  read_f32(hy, y, ny);
  expect_close(y, want, ny, 1e-6);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, hbool, BP_MPS_MASK_BOOL, hy, s, scale),
                BP_MPS_OK);
  read_f32(hy, y, ny);
  for (int e = 0; e < 6; e++) EXPECT(y[e] == 0);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, additive, BP_MPS_MASK_ADDITIVE, hy, s, 1),
                BP_MPS_OK);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_CAUSAL, hy, s, 1), BP_MPS_OK);
  /* Wrong combinations. */
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_BOOL, hy, s, 1),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, hbool, BP_MPS_MASK_NONE, hy, s, 1),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, hbool, BP_MPS_MASK_ADDITIVE, hy, s, 1),
                BP_MPS_E_OUT_OF_RANGE); /* one byte per element is too small for float32 */
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, 9, hy, s, 1), BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_NONE, hy, s, NAN),
                BP_MPS_E_INVALID_ARGUMENT);
  int64_t bad[7];
  memcpy(bad, s, sizeof bad);
  bad[2] = 3; /* 4 query heads over 3 key heads */
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_NONE, hy, bad, 1),
                BP_MPS_E_INVALID_ARGUMENT);
  memcpy(bad, s, sizeof bad);
  bad[4] = 6; /* longer keys than the buffers hold */
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_NONE, hy, bad, 1),
                BP_MPS_E_OUT_OF_RANGE);
  EXPECT_STATUS(bp_mps_sdpa(BP_MPS_F32, hq, hk, hv, 0, BP_MPS_MASK_NONE, hy, NULL, 1),
                BP_MPS_E_INVALID_ARGUMENT);
  uint64_t all[] = {hq, hk, hv, hy, additive, hbool};
  for (int i = 0; i < 6; i++) EXPECT_STATUS(bp_mps_buffer_free(all[i]), BP_MPS_OK);
}

static void check_elementwise(void) {
  int64_t out[3] = {2, 3, 4}, as[3] = {2, 1, 4}, bs[3] = {1, 3, 1};
  float a[8], b[3], y[24];
  uint64_t ha = random_f32(8, a), hb = random_f32(3, b), hy = alloc_bytes(24 * 4);
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F32, ha, hb, hy, 3, as, bs, out),
                BP_MPS_OK);
  read_f32(hy, y, 24);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int l = 0; l < 4; l++) EXPECT(y[(i * 3 + j) * 4 + l] == a[i * 4 + l] + b[j]);
  for (int op = BP_MPS_MUL; op <= BP_MPS_GELU_TANH; op++)
    EXPECT_STATUS(bp_mps_elementwise(op, BP_MPS_F32, ha, op == BP_MPS_MUL ? hb : 0, hy, 3, as,
                                     op == BP_MPS_MUL ? bs : NULL, out),
                  BP_MPS_OK);
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F16, ha, hb, hy, 3, as, bs, out), BP_MPS_OK);
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F32, ha, hb, hy, 0, NULL, NULL, NULL),
                BP_MPS_OK); /* scalars */
  int64_t wrong[3] = {2, 2, 4};
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F32, ha, hb, hy, 3, as, wrong, out),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F32, ha, hb, hy, 3, as, NULL, out),
                BP_MPS_E_INVALID_ARGUMENT);
  EXPECT_STATUS(bp_mps_elementwise(9, BP_MPS_F32, ha, hb, hy, 3, as, bs, out),
                BP_MPS_E_INVALID_ARGUMENT);
  int64_t bigger[3] = {2, 3, 5}, a_bigger[3] = {2, 1, 5};
  EXPECT_STATUS(bp_mps_elementwise(BP_MPS_ADD, BP_MPS_F32, ha, hb, hy, 3, a_bigger, bs, bigger),
                BP_MPS_E_OUT_OF_RANGE);
  uint64_t all[] = {ha, hb, hy};
  for (int i = 0; i < 3; i++) EXPECT_STATUS(bp_mps_buffer_free(all[i]), BP_MPS_OK);
}

/* Threads allocating, copying and freeing at once; each reads its own last error. */
static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = (unsigned char)(i + id);
  for (int round = 0; round < 400; round++) {
    uint64_t h = 0;
    if (bp_mps_buffer_alloc(64, &h) != BP_MPS_OK) return (void *)1;
    if (bp_mps_buffer_write(h, 0, in, 64) != BP_MPS_OK) return (void *)2;
    if (bp_mps_buffer_read(h, 0, out, 64) != BP_MPS_OK || memcmp(in, out, 64)) return (void *)3;
    if (bp_mps_buffer_read(h, 1, out, 64) != BP_MPS_E_OUT_OF_RANGE) return (void *)4;
    if (!strstr(bp_mps_last_error(), "buffer_read")) return (void *)5;
    if (bp_mps_buffer_free(h) != BP_MPS_OK) return (void *)6;
  }
  return NULL;
}

static void check_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 4; i++) {
    void *result;
    pthread_join(t[i], &result);
    EXPECT(result == NULL);
  }
  uint64_t stats[3];
  EXPECT_STATUS(bp_mps_memory_stats(stats), BP_MPS_OK);
  EXPECT(stats[0] == 0 && stats[2] == 0);
}

int main(void) {
  check_before_init();
  check_device();
  check_buffers();
  check_memory_cap_and_table();
  check_strided_copy();
  check_matmul();
  check_conv2d();
  check_softmax();
  check_sdpa();
  check_elementwise();
  check_threads();
  if (failures) {
    fprintf(stderr, "helper_check: %d check(s) failed\n", failures);
    return 1;
  }
  printf("helper_check: every check held\n");
  return 0;
}
