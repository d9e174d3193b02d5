/**
 * How long the native libraries' idle threads spin before they sleep, set before the
 * libraries load (each reads its variable once, when it starts its threads).
 *
 * Three thread sets share the cores of a process that uses this package: OpenBLAS's
 * pthreads, the OpenMP runtime under oneDNN (libgomp) or MKL (libiomp), and
 * backend-openmp's workers (50 µs of spinning, then a sleep). Left at their defaults the
 * native ones spin for milliseconds after every call (OpenBLAS 2^28 cycles, about 0.1 s;
 * libgomp 300,000 pauses; libiomp 200 ms), so whatever runs next on the other core shares
 * it with a spinning thread (BENCHMARKS.md, interleave: a oneDNN convolution right after an
 * OpenBLAS matmul ran several times slower). Here each spins for about 0.1 ms,
 * like backend-openmp's workers, which keeps back-to-back calls quick. A value the user
 * set is never changed (setenv without overwrite).
 */
import { cstr, libc } from "./libc.ts";

/** The variables and the values used when the user set none. */
export const SPIN_DEFAULTS: Readonly<Record<string, string>> = {
  // 2^18 cycles: about 0.1 ms at 2.5 GHz (OpenBLAS takes the exponent, 4 to 30).
  OPENBLAS_THREAD_TIMEOUT: "18",
  // libgomp: pauses before sleeping (a pause is 10-140 cycles, by CPU).
  GOMP_SPINCOUNT: "2000",
  // Intel's OpenMP (MKL, and LLVM's libomp): milliseconds.
  KMP_BLOCKTIME: "1",
};

/** Sets each spin variable the C environment does not have yet; returns those it set. */
export async function limitNativeSpinning(): Promise<string[]> {
  const c = await libc();
  if (!c) return [];
  const set: string[] = [];
  for (const [name, value] of Object.entries(SPIN_DEFAULTS)) {
    if (c.getenv(cstr(name))) continue;
    c.setenv(cstr(name), cstr(value), 0);
    set.push(name);
  }
  return set;
}
