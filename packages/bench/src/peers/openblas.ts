/**
 * openblas-direct: Debian's OpenBLAS (libopenblas0-pthread) called through the FFI layer
 * alone, without the dispatcher: cblas_sgemm on plain Float32Arrays, one thread.
 */
import { defineLibrary, openLibrary } from "@backplane/core/cpu";
import { type GemmPeer, reason } from "./types.ts";

export const OPENBLAS_PATH = "/usr/lib/x86_64-linux-gnu/libopenblas.so.0";

const ROW_MAJOR = 101;
const NO_TRANS = 111;

const DECL = defineLibrary({
  cblas_sgemm: {
    args: [
      "i32", // order
      "i32", // transA
      "i32", // transB
      "i32", // m
      "i32", // n
      "i32", // k
      "f32", // alpha
      "buffer", // A
      "i32", // lda
      "buffer", // B
      "i32", // ldb
      "f32", // beta
      "buffer", // C
      "i32", // ldc
    ],
    returns: "void",
  },
  openblas_set_num_threads: { args: ["i32"], returns: "void" },
  openblas_get_num_threads: { args: [], returns: "i32" },
  openblas_get_config: { args: [], returns: "cstring", optional: true },
});

export async function openOpenblas(threads = 1): Promise<GemmPeer | string> {
  try {
    const r = await openLibrary({ name: "openblas", candidates: [OPENBLAS_PATH] }, DECL);
    if (!r.ok) return r.reason;
    const s = r.lib.symbols;
    s.openblas_set_num_threads(threads);
    const got = s.openblas_get_num_threads();
    if (got !== threads) return `openblas_set_num_threads(${threads}) left ${got} threads`;
    return {
      info: `${r.path} (${s.openblas_get_config?.() ?? "OpenBLAS"}), ${got} thread`,
      async prepare(n, a, b) {
        const C = new Float32Array(n * n);
        const run = () =>
          s.cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, 1, a, n, b, n, 0, C, n);
        return {
          run,
          result: async () => {
            C.fill(Number.NaN);
            run();
            return C.slice();
          },
          dispose: () => {},
        };
      },
    };
  } catch (err) {
    return reason(err);
  }
}
