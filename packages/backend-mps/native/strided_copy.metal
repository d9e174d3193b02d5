// The helper's one Metal kernel: gathers a strided view (up to 8 dims, element sizes
// 1/2/4/8 bytes) into a contiguous buffer. Compiled at run time by newLibraryWithSource.
#include <metal_stdlib>
using namespace metal;

struct StridedCopyParams {
  uint rank;
  uint elem_bytes;
  ulong count;
  long offset;
  long shape[8];
  long strides[8];
};

template <typename T>
static void gather(device const T *src, device T *dst, constant StridedCopyParams &p, ulong i) {
  long pos = p.offset;
  ulong rest = i;
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    long size = p.shape[d];
    pos += long(rest % ulong(size)) * p.strides[d];
    rest /= ulong(size);
  }
  dst[i] = src[pos];
}

kernel void bp_strided_copy(device const uchar *src [[buffer(0)]],
                            device uchar *dst [[buffer(1)]],
                            constant StridedCopyParams &p [[buffer(2)]],
                            uint gid [[thread_position_in_grid]]) {
  ulong i = ulong(gid);
  if (i >= p.count) return;
  switch (p.elem_bytes) {
  case 1: gather((device const uchar *)src, (device uchar *)dst, p, i); break;
  case 2: gather((device const ushort *)src, (device ushort *)dst, p, i); break;
  case 4: gather((device const uint *)src, (device uint *)dst, p, i); break;
  default: gather((device const ulong *)src, (device ulong *)dst, p, i); break;
  }
}
