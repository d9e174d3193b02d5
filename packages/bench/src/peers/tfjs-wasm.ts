/**
 * tfjs-wasm: @tensorflow/tfjs-core with @tensorflow/tfjs-backend-wasm (XNNPACK), one
 * thread, the SIMD binary. In Node the .wasm files are read from the package's dist/.
 */
import { type GemmPeer, reason } from "./types.ts";

type Tf = typeof import("@tensorflow/tfjs-core");
type TfWasm = typeof import("@tensorflow/tfjs-backend-wasm");

/** dist/ of the installed @tensorflow/tfjs-backend-wasm, with a trailing slash. */
async function wasmDir(): Promise<string> {
  const { createRequire } = await import("node:module");
  const { dirname } = await import("node:path");
  const require = createRequire(import.meta.url);
  // "main" is dist/tf-backend-wasm.node.js, next to the .wasm files.
  return `${dirname(require.resolve("@tensorflow/tfjs-backend-wasm"))}/`;
}

export async function openTfjsWasm(threads = 1): Promise<GemmPeer | string> {
  try {
    const tf: Tf = await import("@tensorflow/tfjs-core");
    const wasm: TfWasm = await import("@tensorflow/tfjs-backend-wasm");
    const dir = await wasmDir();
    wasm.setWasmPaths(dir);
    wasm.setThreadsCount(threads);
    // Which binary tfjs loads: threaded-simd (never in Node), simd, or plain.
    const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
    const mt = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
    if (!simd) return "WebAssembly SIMD is not supported here (tfjs would load the plain binary)";
    if (mt) return "tfjs would load the threaded SIMD binary (expected the single-thread one)";
    if (!(await tf.setBackend("wasm"))) return 'tf.setBackend("wasm") failed';
    await tf.ready();
    tf.env().set("DEBUG", false);
    const file = "tfjs-backend-wasm-simd.wasm";
    return {
      info: `tfjs ${tf.version_core}, ${dir}${file}, threads ${wasm.getThreadsCount()}`,
      async prepare(n, a, b) {
        const ta = tf.tensor2d(a, [n, n]);
        const tb = tf.tensor2d(b, [n, n]);
        return {
          // The wasm backend runs kernels synchronously: when matMul returns, C is written.
          run: () => tf.matMul(ta, tb).dispose(),
          result: async () => {
            const c = tf.matMul(ta, tb);
            const out = Float32Array.from(c.dataSync() as Float32Array);
            c.dispose();
            return out;
          },
          dispose: () => {
            ta.dispose();
            tb.dispose();
          },
        };
      },
    };
  } catch (err) {
    return reason(err);
  }
}
