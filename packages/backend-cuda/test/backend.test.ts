/**
 * What backends.cuda and backends.cusparselt say on the machine running the tests. Where no
 * NVIDIA driver is installed (this repository's CI), CUDA is built but not available, with
 * the exact reason; on a machine with a GPU the availability tests check the devices instead.
 */
import {
  backends,
  canUseFlashAttention,
  DeviceError,
  empty,
  randn,
  SDPAParams,
  SDPBackend,
  sdpaRefusals,
} from "@backplane/core";
import { getOp } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { CUDA_BACKEND, cudaApi, cudaStatus } from "../src/internals.ts";

const st = cudaStatus();
const noGpu = !st.available;
const itNoGpu = noGpu ? it : it.skip;
const itGpu = noGpu ? it.skip : it;
const runtimeLoaded = typeof st.runtime === "object";

describe(`backends.cuda on this machine (${noGpu ? `no GPU: ${st.reason}` : `${st.devices.length} GPU(s)`})`, () => {
  it("is built: the package and its PTX are present", () => {
    expect(backends.cuda.isBuilt()).toBe(true);
    expect(backends.cuda.status()).toMatchObject({
      built: true,
      backend: CUDA_BACKEND,
      packageName: "@backplane/backend-cuda",
    });
  });

  itNoGpu("is not available, and says exactly why", () => {
    expect(backends.cuda.isAvailable()).toBe(false);
    const reason = backends.cuda.status().reason!;
    expect(reason).toMatch(
      /libcuda\.so\.1 not found|nvcuda\.dll not found|CUDA_ERROR_|not supported on macOS/,
    );
    if (runtimeLoaded && (st.runtime as { deviceCountStatus: number }).deviceCountStatus === 35) {
      expect(reason).toContain(
        "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version",
      );
    }
    expect(cudaApi.deviceCount()).toBe(0);
    expect(backends.cuda.capability()).toBeUndefined();
  });

  itNoGpu(
    "cuda tensors fail with the reason; kernels are registered and refuse on the backend",
    () => {
      expect(() => empty([2], { device: "cuda" })).toThrow(DeviceError);
      expect(() => empty([2], { device: "cuda" })).toThrow(/CUDA is not available: /);
      const names = getOp("matmul")!.kernels.map((k) => k.name);
      expect(names).toEqual(
        expect.arrayContaining(["cublas-gemm", "cublas-gemm-tf32", "cublaslt-gemm"]),
      );
      const q = randn([1, 2, 4, 8], { seed: 1 });
      expect(canUseFlashAttention(new SDPAParams(q, q, q))).toBe(false);
      expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, new SDPAParams(q, q, q))).toContain(
        "cuda-flash (cuda): runs on cuda, inputs are on cpu",
      );
    },
  );

  itGpu("is available with devices and their capability", () => {
    expect(backends.cuda.isAvailable()).toBe(true);
    expect(cudaApi.deviceCount()).toBeGreaterThan(0);
    const [major] = cudaApi.getDeviceCapability(0);
    expect(major).toBeGreaterThanOrEqual(5);
  });

  it("answers for backends.cusparselt: version() and isAvailable() with the reason", () => {
    const s = backends.cusparselt.status();
    expect(s.backend).toBe("cusparselt");
    if (!st.cusparseLt.path) {
      expect(backends.cusparselt.isAvailable()).toBe(false);
      expect(backends.cusparselt.version()).toBeUndefined();
      expect(s.reason).toMatch(/libcusparseLt\.so\.0 not found|cusparseLt.* not found/);
    } else {
      // The library's text, and torch's integer form of it (0.8.1 -> 801).
      expect(backends.cusparselt.versionString()).toMatch(/^\d+\.\d+\.\d+$/);
      expect(backends.cusparselt.version()).toBeGreaterThan(0);
    }
    if (noGpu) expect(s.reason).toContain("CUDA is not available");
  });

  it("replaces the core's cufftPlanCache placeholder", () => {
    const cache = backends.cuda.cufftPlanCache;
    expect(cache.size).toBe(0);
    expect(cache.maxSize).toBe(4096);
    cache[0]!.maxSize = 10;
    expect(cache.maxSize).toBe(10);
    cache.maxSize = 4096;
    expect(() => {
      (cache as { size: number }).size = 1;
    }).toThrow(/read-only/);
  });

  it("reports the linalg library preference's availability", () => {
    const s = cudaApi.linalgLibraryStatus("magma");
    expect(s.library).toBe("magma");
    if (!st.magma.path) expect(s).toMatchObject({ available: false });
    expect(typeof cudaApi.diagnostics().ptx.built).toBe("boolean");
  });
});
