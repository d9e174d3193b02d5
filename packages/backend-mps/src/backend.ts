/**
 * The "mps" backend (backends.mps): the helper's availability and device, the mps
 * DeviceMemory, the kernels, the CPU fallback flag, and torch.mps's device functions.
 */
import { ArgumentError, opNames } from "@backplane/core";
import {
  type AnyKernelDefinition,
  type Availability,
  type BackendDefinition,
  defineBackend,
  mhaCompositions,
} from "@backplane/core/backend";
import { FALLBACK_FLAG, fallbackKernels } from "./fallback.ts";
import type { HelperMemoryStats } from "./helper.ts";
import { FLOAT_DTYPES } from "./kernels/common.ts";
import { conv2dKernel } from "./kernels/conv2d.ts";
import { elementwiseKernels } from "./kernels/elementwise.ts";
import { matmulKernel } from "./kernels/matmul.ts";
import { sdpaKernel } from "./kernels/sdpa.ts";
import { softmaxKernels } from "./kernels/softmax.ts";
import { shippedHelpers } from "./locate.ts";
import { mpsMemory } from "./memory.ts";
import { isMacosOrNewer, macosVersion } from "./os.ts";
import { currentHelper, currentState, loadHelper, type MpsState } from "./state.ts";
import { VERSION } from "./version.ts";

export const MPS_BACKEND = "mps";

export const mpsKernels: AnyKernelDefinition[] = [
  matmulKernel as AnyKernelDefinition,
  conv2dKernel as AnyKernelDefinition,
  ...(softmaxKernels as AnyKernelDefinition[]),
  sdpaKernel as AnyKernelDefinition,
  ...elementwiseKernels,
  // multiHeadAttention: the core's compositions, each step (matmul, add, sdpa) on mps kernels.
  ...(mhaCompositions("mps", FLOAT_DTYPES) as AnyKernelDefinition[]),
];

/** Members added to backends.mps (torch.backends.mps and torch.mps's functions). */
export interface MpsApi {
  /** torch.backends.mps.is_macos_or_newer(major, minor), read from the running macOS. */
  isMacosOrNewer(major: number, minor: number): boolean;
  /** The Metal device's name ("Apple M2 Pro"). */
  deviceName(): string;
  /** torch.mps.synchronize(): waits for the device's queued work. */
  synchronize(): Promise<void>;
  /**
   * torch.mps.set_per_process_memory_fraction(f): caps the bytes live mps tensors may hold
   * at f x the device's recommended working set (0: no cap beyond Metal's own; at most 2).
   * The default is PyTorch's high watermark, 1.7.
   */
  setPerProcessMemoryFraction(fraction: number): void;
  /** torch.mps.current_allocated_memory(): bytes held by live mps buffers. */
  currentAllocatedMemory(): number;
  /** torch.mps.recommended_max_memory(): Metal's recommendedMaxWorkingSetSize. */
  recommendedMaxMemory(): number;
  /** The helper's buffer statistics (held bytes, cap, live buffers). */
  memoryStats(): HelperMemoryStats;
  /** Where the helper came from, which implementation, the device, macOS, or why not. */
  diagnostics(): Omit<MpsState, "helper"> & { macos?: string; built: boolean };
  /**
   * Opens another helper (a build of your own, or the CPU stand-in the tests use) and
   * refreshes availability; undefined reopens the one for this machine.
   */
  loadHelper(path?: string): Promise<Omit<MpsState, "helper">>;
}

const withoutHelper = ({ helper: _helper, ...rest }: MpsState) => rest;

export const mpsApi: MpsApi = {
  isMacosOrNewer,
  deviceName: () => {
    currentHelper();
    return currentState().device!.name;
  },
  synchronize: async () => currentHelper().synchronize(),
  setPerProcessMemoryFraction: (fraction: number) => {
    if (typeof fraction !== "number" || !(fraction >= 0 && fraction <= 2))
      throw new ArgumentError(
        `mps.setPerProcessMemoryFraction: fraction must be a number in [0, 2], got ${String(fraction)}`,
      );
    const helper = currentHelper();
    const ws = currentState().device!.workingSetBytes;
    helper.setMemoryLimit(fraction === 0 ? 0 : Math.max(1, Math.floor(fraction * ws)));
  },
  currentAllocatedMemory: () => currentHelper().memoryStats().heldBytes,
  recommendedMaxMemory: () => {
    currentHelper();
    return currentState().device!.workingSetBytes;
  },
  memoryStats: () => currentHelper().memoryStats(),
  diagnostics: () => ({
    ...withoutHelper(currentState()),
    macos: macosVersion()?.join("."),
    built: shippedHelpers().built,
  }),
  loadHelper: async (path?: string) => withoutHelper(await loadHelper(path)),
};

export const mpsBackend: BackendDefinition = defineBackend({
  name: MPS_BACKEND,
  namespaces: ["mps"],
  packageName: "@backplane/backend-mps",
  devices: ["mps"],
  version: () => VERSION,
  isBuilt: (): Availability => {
    const s = shippedHelpers();
    return s.built ? { available: true } : { available: false, reason: s.reason };
  },
  isAvailable: (): Availability => {
    const s = currentState();
    return s.helper ? { available: true } : { available: false, reason: s.reason };
  },
  capability: () => {
    const s = currentState();
    return {
      device: s.device?.name,
      implementation: s.implementation,
      helper: s.path,
      bfloat16: s.device?.bfloat16,
      nativeAttention: s.device?.nativeAttention,
      workingSetBytes: s.device?.workingSetBytes,
      macos: macosVersion()?.join("."),
      package: VERSION,
    };
  },
  reads: [FALLBACK_FLAG],
  kernels: [...mpsKernels, ...fallbackKernels(opNames())],
  memories: [mpsMemory],
  api: { mps: { ...mpsApi } },
});
