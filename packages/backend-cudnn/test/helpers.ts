/** What the tests share: where the real cuDNN is, and whether CI requires it. */
import {
  type DeviceContext,
  type DeviceMemory,
  deviceContext,
  deviceMemory,
  provideDeviceContext,
  registerDeviceMemory,
  withdrawDeviceContext,
} from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import { includeDirOf } from "../src/native/load.ts";
import { libraryStatus } from "../src/state.ts";

/** .ci/run installs cuDNN and sets this: a test that would skip fails instead. */
export const EXPECT_CUDNN = readEnv("BACKPLANE_EXPECT_CUDNN") === "1";

const st = libraryStatus();
/** The real library is loaded and can answer engine queries (cuBLASLt beside it). */
export const haveLibrary = st.path !== undefined && st.cublasLt?.path !== undefined;
export const includeDir =
  readEnv("BACKPLANE_CUDNN_INCLUDE") ?? (st.path ? includeDirOf(st.path) : undefined);

let said = false;
/** Prints the one line that says why the real-library tests skip (once per process). */
export function skipLine(): void {
  if (haveLibrary && includeDir) return;
  if (EXPECT_CUDNN)
    throw new Error(
      `BACKPLANE_EXPECT_CUDNN=1 but cuDNN is not usable: ${st.reason ?? "no headers beside it"}`,
    );
  if (said) return;
  said = true;
  console.log(
    `[backend-cudnn] real-library tests skipped: ${st.reason ?? "cudnn_graph.h not found beside the library"}; pip install nvidia-cudnn-cu13 nvidia-cublas and put its site-packages on PYTHONPATH`,
  );
}

import { bytesPerElement, type Tensor } from "@backplane/core";

/**
 * "cuda" memory in host RAM for tests on a machine without a GPU: tensors can be made on
 * "cuda" (to reach the dispatcher and cuDNN's kernels); the addresses a context hands out
 * for them are fake. Returns the memory and the function that puts the previous one back.
 */
export function hostCudaMemory(): { memory: DeviceMemory<number>; restore: () => void } {
  const previous = deviceMemory("cuda");
  const buffers = new Map<number, Uint8Array>();
  let next = 1;
  const memory: DeviceMemory<number> = {
    deviceType: "cuda",
    hostVisible: false,
    allocate: (n) => {
      buffers.set(next, new Uint8Array(n));
      return next++;
    },
    free: (h) => void buffers.delete(h),
    upload: (h, off, src) => buffers.get(h)!.set(src, off),
    download: async (h, off, n) => buffers.get(h)!.slice(off, off + n),
    downloadSync: (h, off, n) => buffers.get(h)!.slice(off, off + n),
    copy: (s, so, d, doff, n) => buffers.get(d)!.set(buffers.get(s)!.subarray(so, so + n), doff),
    sync: async () => {},
  };
  registerDeviceMemory(memory);
  return { memory, restore: () => previous && registerDeviceMemory(previous) };
}

/** The fake address of a tensor's first element in hostCudaMemory: handle << 32 + byte offset. */
export function fakeAddress(t: Tensor): bigint {
  return (BigInt(t.storage.handle as number) << 32n) + BigInt(t.offset * bytesPerElement(t.dtype));
}

/**
 * A "cuda" device context over hostCudaMemory: `devices` devices of compute capability `cc`
 * (one sm_90 by default), the device a tensor names ("cuda:1" -> 1), the current device (the
 * one activated last); records what it was asked.
 */
export function fakeContext(
  cc = 90,
  devices = 1,
): { ctx: DeviceContext; log: string[]; current: () => number; restore: () => void } {
  const previous = deviceContext("cuda");
  const log: string[] = [];
  let current = -1;
  let nextWorkspace = 0xabc0_0000n;
  const ctx: DeviceContext = {
    deviceType: "cuda",
    provider: "test",
    unavailableReason: () => undefined,
    deviceCount: () => devices,
    properties: (index) => ({
      index,
      name: "Fake GPU",
      major: Math.floor(cc / 10),
      minor: cc % 10,
      totalMemory: 2 ** 34,
    }),
    activate: (i) => {
      current = i;
      log.push(`activate ${i}`);
    },
    stream: (i) => 0x5700n + BigInt(i),
    allocate: (i, byteLength) => {
      const ptr = nextWorkspace;
      nextWorkspace += 0x10_0000n;
      log.push(`allocate ${i} ${byteLength}`);
      return { ptr, byteLength, free: () => void log.push(`free ${byteLength}`) };
    },
    indexOf: (t) => Number(/^cuda:(\d+)$/.exec(t.device)?.[1] ?? 0),
    address: fakeAddress,
    synchronize: () => {},
  };
  provideDeviceContext(ctx);
  return {
    ctx,
    log,
    current: () => current,
    restore: () => {
      withdrawDeviceContext(ctx);
      if (previous) provideDeviceContext(previous);
    },
  };
}
