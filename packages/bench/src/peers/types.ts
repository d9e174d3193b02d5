/**
 * What a GEMM peer module hands the gemm suite: open() loads the library or package once
 * (a string is why it cannot), prepare() sets one size up with the suite's inputs.
 */

/** One size of one implementation: C[n,n] = A[n,n] x B[n,n], float32, row-major. */
export interface GemmCase {
  /** One multiplication; what the harness times (may return a promise). */
  run: () => unknown;
  /** Times `count` calls where they run (a worker) and gives ms per call; else run() is timed. */
  timeBatch?: (count: number) => Promise<number>;
  /** C of one multiplication, row-major, for the correctness check. */
  result: () => Promise<Float32Array>;
  /** Frees what prepare() allocated. */
  dispose: () => void | Promise<void>;
}

export interface GemmPeer {
  /** What was loaded, for a note (library path, wasm file, version). */
  info: string;
  prepare(n: number, a: Float32Array, b: Float32Array): Promise<GemmCase>;
  /** Frees the peer itself (sessions, backends), when the suite is done. */
  close?: () => void | Promise<void>;
}

/** The message of anything thrown, on one line (its first two lines joined). */
export function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const lines = msg
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.slice(0, 2).join(" | ").slice(0, 300);
}
