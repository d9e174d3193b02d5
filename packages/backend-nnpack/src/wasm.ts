import { loadWasmModule, loadWasmModuleSync, type WasmModuleFiles } from "@backplane/core/cpu";

/** The id parallel tasks name the module by. */
export const MODULE_ID = "backend-nnpack/conv";

type Ptr = number;
type Fn = (...args: number[]) => void;

/** Per-thread work bytes of a depthwise kernel for its output size and geometry. */
type DepthwiseWorkBytes = (
  outH: number,
  outW: number,
  kh: number,
  kw: number,
  sh: number,
  sw: number,
  dh: number,
  dw: number,
) => number;

/** The exports of assembly/conv.ts (pointers are byte offsets into the CPU memory). */
export interface ConvModule {
  pack_c4: Fn;
  wt8_input: Fn;
  wt8_kernel: Fn;
  wt8_output: Fn;
  wt6_input: Fn;
  wt6_kernel: Fn;
  wt6_output: Fn;
  ft_input: Fn;
  ft_kernel: Fn;
  ft_output: Fn;
  im2col_f32: Fn;
  im2col_f64: Fn;
  bias_f32: Fn;
  bias_f64: Fn;
  dw_f32: Fn;
  dw_f64: Fn;
  dw_c4_f32: Fn;
  dw_c4_work_bytes: DepthwiseWorkBytes;
  dw_work_bytes: DepthwiseWorkBytes;
  equal_bytes(a: Ptr, b: Ptr, n: number): number;
}

/** Per-thread work of the FFT transforms (assembly/conv.ts FT_WORK_BYTES). */
export const FT_WORK_BYTES = 13440;

export const loaded: { conv?: ConvModule } = {};

/** The two builds, as literal URLs so bundlers emit them (this file sits directly under src/). */
const CONV_WASM: WasmModuleFiles = {
  id: MODULE_ID,
  threads: new URL("../wasm/conv.wasm", import.meta.url),
  plain: new URL("../wasm/conv.nothreads.wasm", import.meta.url),
};

/** Instantiates the module synchronously where the runtime allows it, else undefined. */
export function loadConvSync(): ConvModule | undefined {
  const m = loadWasmModuleSync<ConvModule>(CONV_WASM);
  if (m) loaded.conv = m;
  return m;
}

export async function loadConv(): Promise<ConvModule> {
  loaded.conv = await loadWasmModule<ConvModule>(CONV_WASM);
  return loaded.conv;
}

/** The loaded module (kernels run only after the backend initialised). */
export function conv(): ConvModule {
  if (!loaded.conv) throw new Error("backend-nnpack: a kernel ran before the WASM module loaded");
  return loaded.conv;
}
