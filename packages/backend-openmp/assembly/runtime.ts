// backend-openmp's own small WASM module ("backend-openmp/runtime"): deterministic
// chunked reductions and a few helpers the pool's tests use.
//
// All pointers are byte offsets into the imported memory (env.memory, the CPU memory).
// Every export is shaped for parallelFor: a chunk of items [i0, i0 + count) is one call,
// with the per-chunk arguments advanced by the task's `step`.

// ---------------------------------------------------------------- reductions

// Sum of the float64s values[c * chunk .. min((c + 1) * chunk, n)) into out[c], for the
// chunks c in [c0, c0 + count). The order of additions inside a chunk is fixed (two f64x2
// accumulators over pairs, then the tail), so each partial sum depends only on the chunk,
// never on which thread computed it.
export function sumChunksF64(values: usize, n: i32, chunk: i32, out: usize, c0: i32, count: i32): void {
  for (let c = c0; c < c0 + count; c++) {
    const start = c * chunk;
    const end = min(start + chunk, n);
    let p = values + (<usize>start << 3);
    const len = end - start;
    let acc0 = f64x2.splat(0);
    let acc1 = f64x2.splat(0);
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      acc0 = f64x2.add(acc0, v128.load(p));
      acc1 = f64x2.add(acc1, v128.load(p, 16));
      p += 32;
    }
    const s = f64x2.add(acc0, acc1);
    let total = f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1);
    for (; i < len; i++) {
      total += load<f64>(p);
      p += 8;
    }
    store<f64>(out + (<usize>c << 3), total);
  }
}

// The same for float32 values, accumulated in float64.
export function sumChunksF32(values: usize, n: i32, chunk: i32, out: usize, c0: i32, count: i32): void {
  for (let c = c0; c < c0 + count; c++) {
    const start = c * chunk;
    const end = min(start + chunk, n);
    let total: f64 = 0;
    for (let i = start; i < end; i++) total += <f64>load<f32>(values + (<usize>i << 2));
    store<f64>(out + (<usize>c << 3), total);
  }
}

// Plain left-to-right sum of n float64s (the caller's final pass over the partial sums).
export function sumF64(values: usize, n: i32): f64 {
  let total: f64 = 0;
  for (let i = 0; i < n; i++) total += load<f64>(values + (<usize>i << 3));
  return total;
}

// ---------------------------------------------------------------- elementwise (tests)

// x[i] = value for i in [0, count).
export function fillF64(x: usize, count: i32, value: f64): void {
  for (let i = 0; i < count; i++) store<f64>(x + (<usize>i << 3), value);
}

// x[i] *= factor for i in [0, count).
export function scaleF64(x: usize, count: i32, factor: f64): void {
  for (let i = 0; i < count; i++) {
    const p = x + (<usize>i << 3);
    store<f64>(p, load<f64>(p) * factor);
  }
}

// x[i] += value for i in [0, count): a chunk run twice (or never) shows in the result.
export function addF64(x: usize, count: i32, value: f64): void {
  for (let i = 0; i < count; i++) {
    const p = x + (<usize>i << 3);
    store<f64>(p, load<f64>(p) + value);
  }
}

// x[i] = i0 + i as f64 for i in [0, count), with i0 advanced per chunk (step 1).
export function iotaF64(x: usize, i0: i32, count: i32): void {
  for (let i = 0; i < count; i++) store<f64>(x + (<usize>i << 3), <f64>(i0 + i));
}

// ---------------------------------------------------------------- failure (tests)

// Traps (unreachable).
export function trap(): void {
  unreachable();
}

// Traps on any thread but the calling one (thread 0); there it busy-waits `iters` steps
// on `scratch` (a float64 of its own), so the workers get to take chunks.
export function trapOffCaller(thread: i32, iters: i32, scratch: usize): void {
  if (thread !== 0) unreachable();
  for (let i = 0; i < iters; i++) store<f64>(scratch, load<f64>(scratch) + 1.0);
}
