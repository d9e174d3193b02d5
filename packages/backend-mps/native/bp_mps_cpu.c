/*
 * The CPU stand-in for Metal: the same C ABI, computed on the host, so that the tests on a
 * machine without a Mac load a real helper through the real FFI path (bun:ffi, Deno.dlopen,
 * koffi) and check every argument, handle, status code and result above the hardware.
 * Half types are converted to float per element and rounded back to nearest-even, with
 * double accumulation, so results sit within the dtype's rounding of the float64 reference.
 * BP_MPS_STANDIN_WORKING_SET (bytes) sets the device memory it reports (default 8 GiB).
 */
#include "bp_mps_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *impl_name(void) { return "cpu-stand-in"; }

int32_t impl_init(void) {
  if (getenv("BP_MPS_STANDIN_NO_DEVICE"))
    return bp_fail(BP_MPS_E_NO_DEVICE, "no Metal device (BP_MPS_STANDIN_NO_DEVICE is set)");
  return BP_MPS_OK;
}

int32_t impl_device_name(char *out, size_t capacity) {
  strncpy(out, "Backplane CPU stand-in (not Metal)", capacity - 1);
  out[capacity - 1] = 0;
  return BP_MPS_OK;
}

int32_t impl_device_info(uint64_t *out) {
  const char *ws = getenv("BP_MPS_STANDIN_WORKING_SET");
  out[0] = ws ? strtoull(ws, NULL, 10) : (8ull << 30);
  out[1] = 1; /* unified: it is host memory */
  out[2] = 1; /* bfloat16 */
  out[3] = 0; /* no native attention op: the composed path's arithmetic is what runs */
  return BP_MPS_OK;
}

int32_t impl_alloc(uint64_t bytes, void **native) {
  *native = malloc((size_t)bytes);
  if (!*native)
    return bp_fail(BP_MPS_E_OUT_OF_MEMORY, "MPS out of memory: the host refused %llu bytes",
                   (unsigned long long)bytes);
  return BP_MPS_OK;
}

void impl_free(void *native) { free(native); }
void *impl_contents(void *native) { return native; }
int32_t impl_synchronize(void) { return BP_MPS_OK; }

int32_t impl_copy(void *src, uint64_t src_offset, void *dst, uint64_t dst_offset, uint64_t bytes) {
  memmove((char *)dst + dst_offset, (const char *)src + src_offset, (size_t)bytes);
  return BP_MPS_OK;
}

int32_t impl_strided_copy(int32_t elem_bytes, void *src, int64_t offset, int32_t rank,
                          const int64_t *shape, const int64_t *strides, void *dst) {
  int64_t index[BP_MPS_MAX_RANK] = {0};
  int64_t count = 1;
  for (int d = 0; d < rank; d++) count *= shape[d];
  int64_t pos = offset;
  char *out = dst;
  const char *in = src;
  for (int64_t i = 0; i < count; i++) {
    memcpy(out + i * elem_bytes, in + pos * elem_bytes, (size_t)elem_bytes);
    for (int d = rank - 1; d >= 0; d--) {
      if (++index[d] < shape[d]) {
        pos += strides[d];
        break;
      }
      pos -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
  return BP_MPS_OK;
}

/* ---- element access in any op dtype ---- */

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)man, -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = ldexpf((float)(man | 0x400), (int)exp - 25);
  return sign ? -v : v;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  float a = fabsf(f);
  if (a != a) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00; /* rounds to infinity */
  if (a < 6.103515625e-05f) {              /* subnormal: multiples of 2^-24, nearest-even */
    return sign | (uint16_t)lrintf(a * 16777216.0f);
  }
  int e;
  float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  uint32_t mant = (uint32_t)lrintf(m * 2048.0f); /* 11 bits, nearest-even */
  if (mant == 2048) {
    mant = 1024;
    e++;
  }
  return sign | (uint16_t)(((uint32_t)(e + 14) << 10) | (mant & 0x3ff));
}

static float bf16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (f != f) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

static double load(int32_t dtype, const void *p, int64_t i) {
  if (dtype == BP_MPS_F32) return ((const float *)p)[i];
  uint16_t v = ((const uint16_t *)p)[i];
  return dtype == BP_MPS_F16 ? half_to_float(v) : bf16_to_float(v);
}

static void store(int32_t dtype, void *p, int64_t i, double v) {
  if (dtype == BP_MPS_F32) ((float *)p)[i] = (float)v;
  else if (dtype == BP_MPS_F16) ((uint16_t *)p)[i] = float_to_half((float)v);
  else ((uint16_t *)p)[i] = float_to_bf16((float)v);
}

/* ---- ops ---- */

int32_t impl_matmul(int32_t dtype, void *a, void *b, void *c, int64_t batch, int64_t m,
                    int64_t n, int64_t k, int32_t a_batched, int32_t b_batched) {
  for (int64_t z = 0; z < batch; z++) {
    int64_t ao = a_batched ? z * m * k : 0, bo = b_batched ? z * k * n : 0, co = z * m * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++)
          acc += load(dtype, a, ao + i * k + p) * load(dtype, b, bo + p * n + j);
        store(dtype, c, co + i * n + j, acc);
      }
  }
  return BP_MPS_OK;
}

int32_t impl_conv2d(int32_t dtype, void *x, void *w, void *bias, void *y, const int64_t *g) {
  int64_t n = g[0], c = g[1], h = g[2], wd = g[3], o = g[4], kh = g[5], kw = g[6];
  int64_t sh = g[7], sw = g[8], pt = g[9], pl = g[10], dh = g[11], dw = g[12];
  int64_t groups = g[13], oh = g[14], ow = g[15];
  int64_t cg = c / groups, og = o / groups;
  for (int64_t b = 0; b < n; b++)
    for (int64_t oc = 0; oc < o; oc++) {
      int64_t grp = oc / og;
      double base = bias ? load(dtype, bias, oc) : 0;
      for (int64_t r = 0; r < oh; r++)
        for (int64_t s = 0; s < ow; s++) {
          double acc = base;
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t u = 0; u < kh; u++) {
              int64_t hi = r * sh - pt + u * dh;
              int row_in = hi >= 0 && hi < h;
              for (int64_t v = 0; v < kw; v++) {
                int64_t wi = s * sw - pl + v * dw;
                double tap = load(dtype, w, ((oc * cg + ic) * kh + u) * kw + v);
                /* Padding is zeros that are multiplied, as in torch and the reference: an
                   infinite or NaN tap over it makes NaN (0 * inf). */
                if (!row_in || wi < 0 || wi >= wd) {
                  acc += tap * 0;
                  continue;
                }
                acc += load(dtype, x, ((b * c + grp * cg + ic) * h + hi) * wd + wi) * tap;
              }
            }
          store(dtype, y, ((b * o + oc) * oh + r) * ow + s, acc);
        }
    }
  return BP_MPS_OK;
}

int32_t impl_softmax(int32_t dtype, void *x, void *y, int64_t outer, int64_t dim, int64_t inner,
                     int32_t take_log) {
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < inner; b++) {
      int64_t base = a * dim * inner + b;
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < dim; i++) {
        double v = load(dtype, x, base + i * inner);
        if (v > max || v != v) max = v;
      }
      if (isinf(max)) max = max > 0 ? max : 0; /* all -inf gives NaN below, +inf NaN too */
      for (int64_t i = 0; i < dim; i++) sum += exp(load(dtype, x, base + i * inner) - max);
      for (int64_t i = 0; i < dim; i++) {
        double v = load(dtype, x, base + i * inner) - max;
        store(dtype, y, base + i * inner, take_log ? v - log(sum) : exp(v) / sum);
      }
    }
  return BP_MPS_OK;
}

int32_t impl_sdpa(int32_t dtype, void *q, void *k, void *v, void *mask, int32_t mask_kind,
                  void *y, const int64_t *shape, double scale) {
  int64_t batch = shape[0], hq = shape[1], hkv = shape[2], L = shape[3], S = shape[4];
  int64_t E = shape[5], Ev = shape[6], group = hq / hkv;
  double *scores = malloc((size_t)(S ? S : 1) * sizeof(double));
  if (!scores) return bp_fail(BP_MPS_E_OUT_OF_MEMORY, "sdpa: out of host memory");
  for (int64_t b = 0; b < batch; b++)
    for (int64_t h = 0; h < hq; h++) {
      int64_t qo = (b * hq + h) * L * E, ko = (b * hkv + h / group) * S * E;
      int64_t vo = (b * hkv + h / group) * S * Ev, mo = (b * hq + h) * L * S;
      int64_t yo = (b * hq + h) * L * Ev;
      for (int64_t i = 0; i < L; i++) {
        double max = -INFINITY, sum = 0;
        int64_t masked = 0;
        for (int64_t j = 0; j < S; j++) {
          double s = 0;
          for (int64_t e = 0; e < E; e++)
            s += load(dtype, q, qo + i * E + e) * load(dtype, k, ko + j * E + e);
          /* torch scales q and k, so an empty product (E = 0) is 0 at any scale, not NaN. */
          if (E > 0) s *= scale;
          if (mask_kind == BP_MPS_MASK_CAUSAL && j > i) s = -INFINITY;
          if (mask_kind == BP_MPS_MASK_BOOL && !((const uint8_t *)mask)[mo + i * S + j])
            s = -INFINITY;
          if (mask_kind == BP_MPS_MASK_ADDITIVE) s += load(dtype, mask, mo + i * S + j);
          scores[j] = s;
          if (s > max) max = s;
          if (s == -INFINITY) masked++;
        }
        /* Every score -inf (fully masked): the row is 0, as PyTorch 2.13 gives. */
        if (masked == S) {
          for (int64_t e = 0; e < Ev; e++) store(dtype, y, yo + i * Ev + e, 0);
          continue;
        }
        for (int64_t j = 0; j < S; j++) sum += scores[j] = exp(scores[j] - max);
        for (int64_t e = 0; e < Ev; e++) {
          double acc = 0;
          for (int64_t j = 0; j < S; j++) acc += scores[j] / sum * load(dtype, v, vo + j * Ev + e);
          store(dtype, y, yo + i * Ev + e, acc);
        }
      }
    }
  free(scores);
  return BP_MPS_OK;
}

static double gelu(double x, int tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

int32_t impl_elementwise(int32_t op, int32_t dtype, void *a, void *b, void *y, int32_t rank,
                         const int64_t *a_shape, const int64_t *b_shape,
                         const int64_t *out_shape) {
  int64_t a_strides[BP_MPS_MAX_RANK], b_strides[BP_MPS_MAX_RANK], index[BP_MPS_MAX_RANK] = {0};
  int64_t sa = 1, sb = 1, count = 1;
  for (int d = rank - 1; d >= 0; d--) {
    a_strides[d] = a_shape[d] == 1 ? 0 : sa;
    sa *= a_shape[d];
    b_strides[d] = b && b_shape[d] != 1 ? sb : 0;
    if (b) sb *= b_shape[d];
    count *= out_shape[d];
  }
  int64_t pa = 0, pb = 0;
  for (int64_t i = 0; i < count; i++) {
    double x = load(dtype, a, pa), r;
    switch (op) {
    case BP_MPS_ADD: r = x + load(dtype, b, pb); break;
    case BP_MPS_MUL: r = x * load(dtype, b, pb); break;
    case BP_MPS_RELU: r = x < 0 ? 0 : x; break; /* -0 and NaN pass, as torch */
    default: r = gelu(x, op == BP_MPS_GELU_TANH); break;
    }
    store(dtype, y, i, r);
    for (int d = rank - 1; d >= 0; d--) {
      if (++index[d] < out_shape[d]) {
        pa += a_strides[d];
        pb += b_strides[d];
        break;
      }
      pa -= a_strides[d] * (out_shape[d] - 1);
      pb -= b_strides[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
  return BP_MPS_OK;
}
