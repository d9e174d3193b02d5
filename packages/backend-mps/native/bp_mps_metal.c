/*
 * The Metal half: Metal, MetalPerformanceShadersGraph and Foundation reached through the
 * Objective-C runtime (objc_msgSend with a typed cast per call) and dlopen/dlsym, because
 * Apple's SDK headers are not available where this is built. Every class and selector
 * comes from bp_mps_selectors.h. Ops run as cached MPSGraphs on whole shared-storage
 * buffers; the one custom kernel (strided_copy.metal) is compiled at run time.
 * Compiled for macOS only; nothing here has run on Apple hardware in this project's CI.
 */
#include "bp_mps_impl.h"
#include "bp_mps_msl.h"
#include "bp_mps_selectors.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>

typedef void *id;
typedef void *SEL;
typedef void *Class;
typedef unsigned long NSUInteger;
typedef long NSInteger;
#if defined(__aarch64__)
typedef _Bool BOOL;
#else
typedef signed char BOOL;
#endif
typedef struct {
  NSUInteger width, height, depth;
} MTLSize;

/* MPSDataType values (MPSCoreTypes.h): float bit 0x10000000, alternate encoding 0x80000000. */
enum {
  MPS_FLOAT32 = 0x10000020,
  MPS_FLOAT16 = 0x10000010,
  MPS_BFLOAT16 = (int)0x90000010,
  MPS_BOOL = (int)0x80000008
};
enum { MTL_STORAGE_SHARED = 0, MTL_COMMAND_BUFFER_ERROR = 5 };
enum { PADDING_EXPLICIT = 0, LAYOUT_NCHW = 0, LAYOUT_OIHW = 2 };

/* ---- the runtime, classes and selectors ---- */

static Class (*get_class)(const char *);
static SEL (*register_sel)(const char *);
static void *(*pool_push)(void);
static void (*pool_pop)(void *);
static void (*msg_send)(void);
static id (*create_default_device)(void);

#define DECLARE_CLASS(name) static Class cls_##name;
#define DECLARE_SEL(name, text) static SEL sel_##name;
BP_MPS_CLASSES(DECLARE_CLASS)
BP_MPS_SELECTORS(DECLARE_SEL)

/* A typed objc_msgSend: MSG(return type, argument types...)(receiver, selector, args...). */
#define MSG(ret, ...) ((ret(*)(id, SEL, ##__VA_ARGS__))msg_send)

static id device, queue, copy_pipeline;
static int os_major;
static int has_native_sdpa;

static int32_t load_runtime(void) {
  void *objc = dlopen("/usr/lib/libobjc.A.dylib", RTLD_NOW | RTLD_GLOBAL);
  void *metal = dlopen("/System/Library/Frameworks/Metal.framework/Metal", RTLD_NOW | RTLD_GLOBAL);
  void *graph = dlopen("/System/Library/Frameworks/MetalPerformanceShadersGraph.framework/"
                       "MetalPerformanceShadersGraph",
                       RTLD_NOW | RTLD_GLOBAL);
  dlopen("/System/Library/Frameworks/Foundation.framework/Foundation", RTLD_NOW | RTLD_GLOBAL);
  if (!objc || !metal || !graph)
    return bp_fail(BP_MPS_E_NO_DEVICE, "cannot load %s: %s",
                   !objc ? "libobjc" : !metal ? "Metal.framework" : "MetalPerformanceShadersGraph",
                   dlerror());
  get_class = (Class(*)(const char *))dlsym(objc, "objc_getClass");
  register_sel = (SEL(*)(const char *))dlsym(objc, "sel_registerName");
  pool_push = (void *(*)(void))dlsym(objc, "objc_autoreleasePoolPush");
  pool_pop = (void (*)(void *))dlsym(objc, "objc_autoreleasePoolPop");
  msg_send = (void (*)(void))dlsym(objc, "objc_msgSend");
  create_default_device = (id(*)(void))dlsym(metal, "MTLCreateSystemDefaultDevice");
  if (!get_class || !register_sel || !pool_push || !pool_pop || !msg_send || !create_default_device)
    return bp_fail(BP_MPS_E_NO_DEVICE, "the Objective-C runtime or Metal lacks a symbol");
#define LOAD_CLASS(name)                                                                       \
  if (!(cls_##name = get_class(#name)))                                                        \
    return bp_fail(BP_MPS_E_NO_DEVICE, "class %s not found (macOS too old?)", #name);
#define LOAD_SEL(name, text) sel_##name = register_sel(text);
  BP_MPS_CLASSES(LOAD_CLASS)
  BP_MPS_SELECTORS(LOAD_SEL)
  return BP_MPS_OK;
}

/* ---- Foundation helpers (autoreleased objects: call inside a pool) ---- */

static id ns_string(const char *s) { return MSG(id, const char *)(cls_NSString, sel_stringWithUTF8String, s); }
static const char *c_string(id s) { return s ? MSG(const char *)(s, sel_UTF8String) : "(none)"; }
static id ns_number(int64_t v) { return MSG(id, long long)(cls_NSNumber, sel_numberWithLongLong, v); }

static id ns_shape(const int64_t *dims, int n) {
  id items[BP_MPS_MAX_RANK + 2];
  for (int i = 0; i < n; i++) items[i] = ns_number(dims[i]);
  return MSG(id, const id *, NSUInteger)(cls_NSArray, sel_arrayWithObjectsCount, items, (NSUInteger)n);
}

static id ns_dictionary(const id *values, const id *keys, int n) {
  return MSG(id, const id *, const id *, NSUInteger)(cls_NSDictionary, sel_dictionaryWithObjectsForKeysCount,
                                                     values, keys, (NSUInteger)n);
}

static void release(id object) {
  if (object) MSG(void)(object, sel_release);
}

static int32_t ns_failure(int32_t code, const char *what, id error) {
  id text = error ? MSG(id)(error, sel_localizedDescription) : NULL;
  return bp_fail(code, "%s: %s", what, c_string(text));
}

static int mps_type(int32_t dtype) {
  return dtype == BP_MPS_F32 ? MPS_FLOAT32 : dtype == BP_MPS_F16 ? MPS_FLOAT16 : MPS_BFLOAT16;
}

/* ---- device, buffers, queue ---- */

static int read_os_major(void) {
  char text[32] = "";
  size_t len = sizeof text;
  if (sysctlbyname("kern.osproductversion", text, &len, NULL, 0) != 0) return 0;
  return atoi(text);
}

static int32_t build_copy_pipeline(void) {
  id error = NULL;
  id library = MSG(id, id, id, id *)(device, sel_newLibraryWithSourceOptionsError,
                                     ns_string(BP_MPS_MSL_STRIDED_COPY), NULL, &error);
  if (!library) return ns_failure(BP_MPS_E_DEVICE, "compiling strided_copy.metal", error);
  id function = MSG(id, id)(library, sel_newFunctionWithName, ns_string("bp_strided_copy"));
  if (function)
    copy_pipeline = MSG(id, id, id *)(device, sel_newComputePipelineStateWithFunctionError, function, &error);
  release(function);
  release(library);
  if (!copy_pipeline) return ns_failure(BP_MPS_E_DEVICE, "building bp_strided_copy", error);
  return BP_MPS_OK;
}

const char *impl_name(void) { return "metal"; }

int32_t impl_init(void) {
  int32_t status = load_runtime();
  if (status) return status;
  void *pool = pool_push();
  device = create_default_device();
  if (!device) {
    pool_pop(pool);
    return bp_fail(BP_MPS_E_NO_DEVICE, "MTLCreateSystemDefaultDevice found no Metal device");
  }
  queue = MSG(id)(device, sel_newCommandQueue);
  os_major = read_os_major();
  id probe = MSG(id)(MSG(id)(cls_MPSGraph, sel_alloc), sel_init);
  has_native_sdpa = os_major >= 15 && MSG(BOOL, SEL)(probe, sel_respondsToSelector, sel_sdpa);
  release(probe);
  status = queue ? build_copy_pipeline() : bp_fail(BP_MPS_E_DEVICE, "newCommandQueue failed");
  pool_pop(pool);
  return status;
}

int32_t impl_device_name(char *out, size_t capacity) {
  void *pool = pool_push();
  snprintf(out, capacity, "%s", c_string(MSG(id)(device, sel_name)));
  pool_pop(pool);
  return BP_MPS_OK;
}

int32_t impl_device_info(uint64_t *out) {
  out[0] = MSG(uint64_t)(device, sel_recommendedMaxWorkingSetSize);
  out[1] = MSG(BOOL)(device, sel_hasUnifiedMemory) ? 1 : 0;
  out[2] = os_major >= 14; /* MPSGraph's bfloat16 arrived in macOS 14 */
  out[3] = (uint64_t)has_native_sdpa;
  return BP_MPS_OK;
}

int32_t impl_alloc(uint64_t bytes, void **native) {
  *native = MSG(id, NSUInteger, NSUInteger)(device, sel_newBufferWithLengthOptions, (NSUInteger)bytes,
                                            MTL_STORAGE_SHARED);
  if (!*native)
    return bp_fail(BP_MPS_E_OUT_OF_MEMORY, "MPS out of memory: Metal refused a %llu-byte buffer",
                   (unsigned long long)bytes);
  return BP_MPS_OK;
}

void impl_free(void *native) { release(native); }
void *impl_contents(void *native) { return MSG(void *)(native, sel_contents); }

/* Every op commits and waits, so there is never queued work here. */
int32_t impl_synchronize(void) { return BP_MPS_OK; }

static int32_t finish(id command_buffer, const char *what) {
  MSG(void)(command_buffer, sel_commit);
  MSG(void)(command_buffer, sel_waitUntilCompleted);
  if (MSG(NSUInteger)(command_buffer, sel_status) == MTL_COMMAND_BUFFER_ERROR)
    return ns_failure(BP_MPS_E_DEVICE, what, MSG(id)(command_buffer, sel_error));
  return BP_MPS_OK;
}

int32_t impl_copy(void *src, uint64_t src_offset, void *dst, uint64_t dst_offset, uint64_t bytes) {
  void *pool = pool_push();
  id cb = MSG(id)(queue, sel_commandBuffer);
  id blit = MSG(id)(cb, sel_blitCommandEncoder);
  MSG(void, id, NSUInteger, id, NSUInteger, NSUInteger)(blit, sel_copyFromBuffer, src, src_offset, dst,
                                                        dst_offset, bytes);
  MSG(void)(blit, sel_endEncoding);
  int32_t status = finish(cb, "buffer copy");
  pool_pop(pool);
  return status;
}

/* The layout of StridedCopyParams in strided_copy.metal. */
typedef struct {
  uint32_t rank, elem_bytes;
  uint64_t count;
  int64_t offset, shape[BP_MPS_MAX_RANK], strides[BP_MPS_MAX_RANK];
} strided_params_t;

int32_t impl_strided_copy(int32_t elem_bytes, void *src, int64_t offset, int32_t rank,
                          const int64_t *shape, const int64_t *strides, void *dst) {
  strided_params_t p = {(uint32_t)rank, (uint32_t)elem_bytes, 1, offset, {0}, {0}};
  for (int d = 0; d < rank; d++) {
    p.shape[d] = shape[d];
    p.strides[d] = strides[d];
    p.count *= (uint64_t)shape[d];
  }
  if (p.count > 0xffffffffull)
    return bp_fail(BP_MPS_E_UNSUPPORTED, "strided copy of %llu elements (at most 2^32 - 1)",
                   (unsigned long long)p.count);
  void *pool = pool_push();
  id cb = MSG(id)(queue, sel_commandBuffer);
  id enc = MSG(id)(cb, sel_computeCommandEncoder);
  MSG(void, id)(enc, sel_setComputePipelineState, copy_pipeline);
  MSG(void, id, NSUInteger, NSUInteger)(enc, sel_setBufferOffsetAtIndex, src, 0, 0);
  MSG(void, id, NSUInteger, NSUInteger)(enc, sel_setBufferOffsetAtIndex, dst, 0, 1);
  MSG(void, const void *, NSUInteger, NSUInteger)(enc, sel_setBytesLengthAtIndex, &p, sizeof p, 2);
  NSUInteger group = MSG(NSUInteger)(copy_pipeline, sel_maxTotalThreadsPerThreadgroup);
  MTLSize grid = {(NSUInteger)p.count, 1, 1}, threads = {group < 256 ? group : 256, 1, 1};
  MSG(void, MTLSize, MTLSize)(enc, sel_dispatchThreads, grid, threads);
  MSG(void)(enc, sel_endEncoding);
  int32_t status = finish(cb, "strided copy");
  pool_pop(pool);
  return status;
}

/* ---- graphs: built once per op and shape, then run on the buffers ---- */

#define MAX_INPUTS 5
typedef struct {
  char key[160];
  id graph;
  id inputs[MAX_INPUTS];
  int input_count;
  id output;
} graph_entry_t;

#define GRAPH_CACHE 64
static graph_entry_t cache[GRAPH_CACHE];
static int cache_next;

static graph_entry_t *cached(const char *key) {
  for (int i = 0; i < GRAPH_CACHE; i++)
    if (cache[i].graph && strcmp(cache[i].key, key) == 0) return &cache[i];
  return NULL;
}

/* A fresh entry for `key` (the oldest is evicted); its graph is new and owned by the cache. */
static graph_entry_t *new_entry(const char *key) {
  graph_entry_t *e = &cache[cache_next];
  cache_next = (cache_next + 1) % GRAPH_CACHE;
  release(e->graph);
  memset(e, 0, sizeof *e);
  snprintf(e->key, sizeof e->key, "%s", key);
  e->graph = MSG(id)(MSG(id)(cls_MPSGraph, sel_alloc), sel_init);
  return e;
}

static id placeholder(graph_entry_t *e, const int64_t *dims, int n, int type) {
  id t = MSG(id, id, int, id)(e->graph, sel_placeholder, ns_shape(dims, n), type, NULL);
  e->inputs[e->input_count++] = t;
  return t;
}

static id scalar(graph_entry_t *e, double v, int type) {
  return MSG(id, double, int)(e->graph, sel_constantWithScalar, v, type);
}
static id binary(graph_entry_t *e, SEL op, id a, id b) { return MSG(id, id, id, id)(e->graph, op, a, b, NULL); }
static id unary(graph_entry_t *e, SEL op, id a) { return MSG(id, id, id)(e->graph, op, a, NULL); }
static id reshape(graph_entry_t *e, id t, const int64_t *dims, int n) {
  return MSG(id, id, id, id)(e->graph, sel_reshape, t, ns_shape(dims, n), NULL);
}

static id tensor_data(void *buffer, const int64_t *dims, int n, int type) {
  id data = MSG(id)(cls_MPSGraphTensorData, sel_alloc);
  return MSG(id, id, id, int)(data, sel_initWithMTLBufferShapeDataType, buffer, ns_shape(dims, n), type);
}

typedef struct {
  void *buffer;
  const int64_t *dims;
  int rank;
  int type;
} operand_t;

/* Runs the entry's graph: inputs[i] <- operands[i], output -> out. Synchronous. */
static int32_t run(graph_entry_t *e, const operand_t *ops, operand_t out) {
  id values[MAX_INPUTS], keys[MAX_INPUTS];
  for (int i = 0; i < e->input_count; i++) {
    keys[i] = e->inputs[i];
    values[i] = tensor_data(ops[i].buffer, ops[i].dims, ops[i].rank, ops[i].type);
  }
  id result = tensor_data(out.buffer, out.dims, out.rank, out.type);
  id feeds = ns_dictionary(values, keys, e->input_count);
  id results = ns_dictionary(&result, &e->output, 1);
  MSG(void, id, id, id, id)(e->graph, sel_run, queue, feeds, NULL, results);
  for (int i = 0; i < e->input_count; i++) release(values[i]);
  release(result);
  return BP_MPS_OK;
}

int32_t impl_matmul(int32_t dtype, void *a, void *b, void *c, int64_t batch, int64_t m,
                    int64_t n, int64_t k, int32_t a_batched, int32_t b_batched) {
  void *pool = pool_push();
  char key[160];
  snprintf(key, sizeof key, "matmul %d %lld %lld %lld %lld %d %d", dtype, (long long)batch,
           (long long)m, (long long)n, (long long)k, a_batched, b_batched);
  int type = mps_type(dtype);
  int64_t da[3] = {a_batched ? batch : 1, m, k}, db[3] = {b_batched ? batch : 1, k, n};
  int64_t dc[3] = {batch, m, n};
  graph_entry_t *e = cached(key);
  if (!e) {
    e = new_entry(key);
    id ta = placeholder(e, da, 3, type), tb = placeholder(e, db, 3, type);
    e->output = binary(e, sel_matmul, ta, tb);
  }
  operand_t ops[2] = {{a, da, 3, type}, {b, db, 3, type}};
  int32_t status = run(e, ops, (operand_t){c, dc, 3, type});
  pool_pop(pool);
  return status;
}

int32_t impl_conv2d(int32_t dtype, void *x, void *w, void *bias, void *y, const int64_t *g) {
  void *pool = pool_push();
  char key[160];
  snprintf(key, sizeof key, "conv2d %d %d", dtype, bias != NULL);
  for (int i = 0; i < 16; i++)
    snprintf(key + strlen(key), sizeof key - strlen(key), " %lld", (long long)g[i]);
  int type = mps_type(dtype);
  int64_t dx[4] = {g[0], g[1], g[2], g[3]}, dw[4] = {g[4], g[1] / g[13], g[5], g[6]};
  int64_t dy[4] = {g[0], g[4], g[14], g[15]}, db[4] = {1, g[4], 1, 1};
  graph_entry_t *e = cached(key);
  if (!e) {
    e = new_entry(key);
    /* The bottom and right padding that give exactly the requested output size. */
    int64_t pb = (g[14] - 1) * g[7] + g[11] * (g[5] - 1) + 1 - g[2] - g[9];
    int64_t pr = (g[15] - 1) * g[8] + g[12] * (g[6] - 1) + 1 - g[3] - g[10];
    id desc = MSG(id, NSUInteger, NSUInteger, NSUInteger, NSUInteger, NSUInteger, NSUInteger,
                  NSUInteger, NSUInteger, NSUInteger, NSUInteger, NSUInteger, NSUInteger)(
        cls_MPSGraphConvolution2DOpDescriptor, sel_convDescriptor, g[8], g[7], g[12], g[11], g[13],
        g[10], pr > 0 ? pr : 0, g[9], pb > 0 ? pb : 0, PADDING_EXPLICIT, LAYOUT_NCHW, LAYOUT_OIHW);
    id tx = placeholder(e, dx, 4, type), tw = placeholder(e, dw, 4, type);
    id out = MSG(id, id, id, id, id)(e->graph, sel_conv2d, tx, tw, desc, NULL);
    if (bias) out = binary(e, sel_add, out, placeholder(e, db, 4, type));
    e->output = out;
  }
  operand_t ops[3] = {{x, dx, 4, type}, {w, dw, 4, type}, {bias, db, 4, type}};
  int32_t status = run(e, ops, (operand_t){y, dy, 4, type});
  pool_pop(pool);
  return status;
}

int32_t impl_softmax(int32_t dtype, void *x, void *y, int64_t outer, int64_t dim, int64_t inner,
                     int32_t take_log) {
  void *pool = pool_push();
  char key[160];
  snprintf(key, sizeof key, "softmax %d %lld %lld %lld %d", dtype, (long long)outer,
           (long long)dim, (long long)inner, take_log);
  int type = mps_type(dtype);
  int64_t d[3] = {outer, dim, inner};
  graph_entry_t *e = cached(key);
  if (!e) {
    e = new_entry(key);
    id t = placeholder(e, d, 3, type);
    if (!take_log) {
      e->output = MSG(id, id, NSInteger, id)(e->graph, sel_softmax, t, 1, NULL);
    } else { /* x - max - log(sum(exp(x - max))) */
      id max = MSG(id, id, NSInteger, id)(e->graph, sel_reduceMax, t, 1, NULL);
      id shifted = binary(e, sel_sub, t, max);
      id sum = MSG(id, id, NSInteger, id)(e->graph, sel_reduceSum, unary(e, sel_exp, shifted), 1, NULL);
      e->output = binary(e, sel_sub, shifted, unary(e, sel_log, sum));
    }
  }
  operand_t ops[1] = {{x, d, 3, type}};
  int32_t status = run(e, ops, (operand_t){y, d, 3, type});
  pool_pop(pool);
  return status;
}

/* softmax(q k^T * scale + mask) v with heads grouped as [batch, heads_kv, group, L, .]. */
static id composed_attention(graph_entry_t *e, id q, id k, id v, id mask, int32_t mask_kind,
                             const int64_t *s, double scale, int type) {
  int64_t group = s[1] / s[2];
  int64_t q5[5] = {s[0], s[2], group, s[3], s[5]}, k5[5] = {s[0], s[2], 1, s[4], s[5]};
  int64_t v5[5] = {s[0], s[2], 1, s[4], s[6]}, m5[5] = {s[0], s[2], group, s[3], s[4]};
  int64_t y4[4] = {s[0], s[1], s[3], s[6]};
  id kt = MSG(id, id, NSUInteger, NSUInteger, id)(e->graph, sel_transpose, reshape(e, k, k5, 5), 3, 4, NULL);
  id scores = binary(e, sel_matmul, reshape(e, q, q5, 5), kt);
  scores = binary(e, sel_mul, scores, scalar(e, scale, type));
  id minus_inf = scalar(e, -__builtin_inf(), type);
  if (mask_kind == BP_MPS_MASK_ADDITIVE) scores = binary(e, sel_add, scores, reshape(e, mask, m5, 5));
  if (mask_kind == BP_MPS_MASK_BOOL || mask_kind == BP_MPS_MASK_CAUSAL) {
    id keep = mask_kind == BP_MPS_MASK_CAUSAL ? mask : reshape(e, mask, m5, 5);
    scores = MSG(id, id, id, id, id)(e->graph, sel_select, keep, scores, minus_inf, NULL);
  }
  id weights = MSG(id, id, NSInteger, id)(e->graph, sel_softmax, scores, 4, NULL);
  return reshape(e, binary(e, sel_matmul, weights, reshape(e, v, v5, 5)), y4, 4);
}

/* The causal mask as a constant [1, 1, 1, L, S] of bools (j <= i). */
static id causal_mask(graph_entry_t *e, int64_t L, int64_t S) {
  uint8_t *bits = malloc((size_t)(L * S ? L * S : 1));
  if (!bits) return NULL;
  for (int64_t i = 0; i < L; i++)
    for (int64_t j = 0; j < S; j++) bits[i * S + j] = j <= i;
  id data = MSG(id, const void *, NSUInteger)(cls_NSData, sel_dataWithBytesLength, bits, (NSUInteger)(L * S));
  free(bits);
  int64_t dims[2] = {L, S};
  return MSG(id, id, id, int)(e->graph, sel_constantWithData, data, ns_shape(dims, 2), MPS_BOOL);
}

int32_t impl_sdpa(int32_t dtype, void *q, void *k, void *v, void *mask, int32_t mask_kind,
                  void *y, const int64_t *s, double scale) {
  void *pool = pool_push();
  char key[160];
  snprintf(key, sizeof key, "sdpa %d %d %lld %lld %lld %lld %lld %lld %lld %.17g", dtype, mask_kind,
           (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3], (long long)s[4],
           (long long)s[5], (long long)s[6], scale);
  int type = mps_type(dtype);
  int64_t dq[4] = {s[0], s[1], s[3], s[5]}, dk[4] = {s[0], s[2], s[4], s[5]};
  int64_t dv[4] = {s[0], s[2], s[4], s[6]}, dm[4] = {s[0], s[1], s[3], s[4]};
  int64_t dy[4] = {s[0], s[1], s[3], s[6]};
  int mask_type = mask_kind == BP_MPS_MASK_BOOL ? MPS_BOOL : type;
  graph_entry_t *e = cached(key);
  if (!e) {
    e = new_entry(key);
    id tq = placeholder(e, dq, 4, type), tk = placeholder(e, dk, 4, type);
    id tv = placeholder(e, dv, 4, type);
    id tm = mask ? placeholder(e, dm, 4, mask_type) : NULL;
    if (mask_kind == BP_MPS_MASK_CAUSAL) {
      tm = causal_mask(e, s[3], s[4]);
      if (!tm) {
        pool_pop(pool);
        return bp_fail(BP_MPS_E_OUT_OF_MEMORY, "sdpa: no host memory for the causal mask");
      }
      int64_t full[5] = {1, 1, 1, s[3], s[4]};
      tm = reshape(e, tm, full, 5);
    }
    int native = has_native_sdpa && s[1] == s[2];
    if (native && mask_kind == BP_MPS_MASK_NONE)
      e->output = MSG(id, id, id, id, float, id)(e->graph, sel_sdpa, tq, tk, tv, (float)scale, NULL);
    else if (native && mask_kind == BP_MPS_MASK_ADDITIVE)
      e->output =
          MSG(id, id, id, id, id, float, id)(e->graph, sel_sdpaMasked, tq, tk, tv, tm, (float)scale, NULL);
    else
      e->output = composed_attention(e, tq, tk, tv, tm, mask_kind, s, scale, type);
  }
  operand_t ops[4] = {{q, dq, 4, type}, {k, dk, 4, type}, {v, dv, 4, type}, {mask, dm, 4, mask_type}};
  int32_t status = run(e, ops, (operand_t){y, dy, 4, type});
  pool_pop(pool);
  return status;
}

int32_t impl_elementwise(int32_t op, int32_t dtype, void *a, void *b, void *y, int32_t rank,
                         const int64_t *a_shape, const int64_t *b_shape,
                         const int64_t *out_shape) {
  void *pool = pool_push();
  char key[160];
  int n = snprintf(key, sizeof key, "ew %d %d %d", op, dtype, rank);
  for (int i = 0; i < rank && n < (int)sizeof key - 40; i++)
    n += snprintf(key + n, sizeof key - (size_t)n, " %lld/%lld/%lld", (long long)a_shape[i],
                  b ? (long long)b_shape[i] : 0LL, (long long)out_shape[i]);
  int type = mps_type(dtype);
  graph_entry_t *e = cached(key);
  if (!e) {
    e = new_entry(key);
    id ta = placeholder(e, a_shape, rank, type);
    switch (op) {
    case BP_MPS_ADD: e->output = binary(e, sel_add, ta, placeholder(e, b_shape, rank, type)); break;
    case BP_MPS_MUL: e->output = binary(e, sel_mul, ta, placeholder(e, b_shape, rank, type)); break;
    case BP_MPS_RELU: e->output = unary(e, sel_relu, ta); break;
    case BP_MPS_GELU: { /* 0.5 x (1 + erf(x / sqrt 2)) */
      id inner = unary(e, sel_erf, binary(e, sel_mul, ta, scalar(e, 0.70710678118654752, type)));
      id half_x = binary(e, sel_mul, ta, scalar(e, 0.5, type));
      e->output = binary(e, sel_mul, half_x, binary(e, sel_add, inner, scalar(e, 1.0, type)));
      break;
    }
    default: { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
      id cube = binary(e, sel_mul, binary(e, sel_mul, ta, ta), ta);
      id inner = binary(e, sel_add, ta, binary(e, sel_mul, cube, scalar(e, 0.044715, type)));
      id t = unary(e, sel_tanh, binary(e, sel_mul, inner, scalar(e, 0.79788456080286536, type)));
      id half_x = binary(e, sel_mul, ta, scalar(e, 0.5, type));
      e->output = binary(e, sel_mul, half_x, binary(e, sel_add, t, scalar(e, 1.0, type)));
      break;
    }
    }
  }
  operand_t ops[2] = {{a, a_shape, rank, type}, {b, b_shape, rank, type}};
  int32_t status = run(e, ops, (operand_t){y, out_shape, rank, type});
  pool_pop(pool);
  return status;
}
