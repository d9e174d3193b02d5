/**
 * Availability and its reasons, capability(), the powerPreference flag, and what happens
 * when there is no adapter (simulated with a GPU object whose requestAdapter() gives null,
 * so these run on any machine).
 */
import { backends, DeviceError, explain, matmul, rand, ready, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  configureWebGPU,
  reinitialize,
  staticAvailability,
  WEBGPU_BACKEND,
  webgpuAvailability,
  webgpuCapability,
  webgpuDevice,
} from "../src/index.ts";
import { availability, available, gpuIt, TIMEOUT, values } from "./helpers.ts";

describe("webgpu availability", () => {
  it("says why WebGPU is missing, before any adapter is asked for", () => {
    expect(
      staticAvailability({
        runtime: "deno",
        configured: false,
        hasNavigatorGpu: false,
        packageResolves: undefined,
      }),
    ).toEqual({
      available: false,
      reason: expect.stringMatching(/^navigator\.gpu is undefined/),
    });
    expect(
      staticAvailability({
        runtime: "node",
        configured: false,
        hasNavigatorGpu: false,
        packageResolves: false,
      }).reason,
    ).toMatch(/the webgpu package is not installed/);
    for (const runtime of ["node", "bun"])
      expect(
        staticAvailability({
          runtime,
          configured: false,
          hasNavigatorGpu: false,
          packageResolves: true,
        }).available,
      ).toBe(true);
    expect(
      staticAvailability({
        runtime: "browser",
        configured: false,
        hasNavigatorGpu: true,
        packageResolves: undefined,
      }).available,
    ).toBe(true);
  });

  it("backends.webgpu answers from the probe", () => {
    expect(backends.webgpu.isAvailable()).toBe(available);
    const st = backends.webgpu.status();
    expect(st.backend).toBe(WEBGPU_BACKEND);
    expect(st.packageName).toBe("@backplane/backend-webgpu");
    if (!available) expect(st.reason).toBe(availability.reason);
    expect(backends.webgpu.powerPreference).toBe("high-performance");
    expect(backends.webgpu.allowF16).toBe(true);
  });

  gpuIt("capability() has the adapter, features and limits", () => {
    const cap = webgpuCapability()!;
    expect(backends.webgpu.capability()).toEqual(cap);
    expect(typeof cap.adapter.description).toBe("string");
    expect(cap.source).toMatch(/navigator\.gpu|webgpu package/);
    expect(typeof cap.features.shaderF16).toBe("boolean");
    expect(typeof cap.features.timestampQuery).toBe("boolean");
    expect(cap.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(2 ** 27);
    expect(cap.limits.maxComputeWorkgroupStorageSize).toBeGreaterThanOrEqual(16384);
    expect(cap.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
    console.log(
      `[backend-webgpu] ${cap.adapter.description || cap.adapter.architecture} via ${cap.source}; features: ${cap.features.all.join(" ")}`,
    );
  });

  // Deno's OpenGL path loads libglvnd's EGL, whose exit-time destructor races a thread
  // ending beside it (a heap corruption after every test passed): see src/deno-vulkan.ts.
  const deno = (globalThis as { Deno?: { env: { get(n: string): string | undefined } } }).Deno;
  gpuIt("on Deno on Linux, EGL is never loaded (Vulkan only)", async () => {
    if (!deno || !/linux/.test(String(Reflect.get(deno, "build")?.os))) return; // Deno on Linux only
    const fs = await import("node:fs");
    // Unset here means backend-webgpu did not choose; another value is the user's choice.
    const chosen = deno.env.get("DENO_WEBGPU_BACKEND");
    expect(chosen).toBeDefined();
    if (chosen !== "vulkan") return;
    const maps = fs.readFileSync("/proc/self/maps", "utf8");
    expect(maps).not.toMatch(/libEGL/);
    expect(maps).toMatch(/libvulkan/);
  });

  const withoutChoice = (env: Record<string, string>) => {
    const { DENO_WEBGPU_BACKEND: _b, VK_DRIVER_FILES: _d, ...rest } = env;
    return rest;
  };
  // A machine with Mesa's OpenGL and no Vulkan driver (a bare machine): no adapter, a reason
  // that says what to install, and still no EGL (Deno's OpenGL would be llvmpipe there).
  (deno && /linux/.test(String(Reflect.get(deno, "build")?.os)) ? it : it.skip)(
    "on Deno on Linux without a Vulkan driver: no adapter, the reason, no EGL",
    async () => {
      const D = deno as unknown as {
        execPath(): string;
        env: { toObject(): Record<string, string> };
        Command: new (
          cmd: string,
          o: { args: string[]; env: Record<string, string>; clearEnv?: boolean },
        ) => { output(): Promise<{ code: number; stdout: Uint8Array; stderr: Uint8Array }> };
      };
      const script = `
        import { webgpuAvailability } from "./packages/backend-webgpu/src/index.ts";
        const a = await webgpuAvailability();
        const egl = Deno.readTextFileSync("/proc/self/maps").includes("libEGL");
        console.log(JSON.stringify({ ...a, egl }));`;
      const out = await new D.Command(D.execPath(), {
        args: ["eval", "--config", "deno.json", script],
        // No Vulkan driver: the loader reads this list (nothing there) instead of the installed
        // ones; and no backend chosen by the user.
        env: { ...withoutChoice(D.env.toObject()), VK_ICD_FILENAMES: "/nonexistent/none.json" },
        clearEnv: true,
      }).output();
      const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
      const r = JSON.parse(text) as { available: boolean; reason: string; egl: boolean };
      expect(r.available).toBe(false);
      expect(r.reason).toMatch(/requestAdapter\(\) returned null/);
      expect(r.reason).toMatch(/DENO_WEBGPU_BACKEND=gl/);
      expect(r.egl).toBe(false);
    },
    TIMEOUT,
  );

  gpuIt("uncaptured device errors are collected", async () => {
    const device = webgpuDevice()!;
    const n = webgpuCapability()!.errors.length;
    // Waits for the event itself (a runtime may deliver it late), up to 5 s for one that
    // never dispatches it.
    const dispatched = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 5000);
      if (typeof device.addEventListener !== "function") return; // the handler property only
      device.addEventListener(
        "uncapturederror",
        () => {
          clearTimeout(timer);
          resolve(true);
        },
        { once: true },
      );
    });
    device.createBuffer({ size: 4, usage: 0x1 | 0x80 }); // MAP_READ with STORAGE: invalid
    await device.queue.onSubmittedWorkDone();
    await dispatched;
    await new Promise((r) => setTimeout(r, 0)); // the backend's own listener ran too
    const errors = webgpuCapability()!.errors;
    if (errors.length === n)
      console.log("[backend-webgpu] this runtime does not dispatch uncapturederror");
    else expect(errors[errors.length - 1]).toMatch(/usage|MAP_READ|Storage/i);
  });

  it(
    "no adapter: the reason reaches isAvailable(), explain() and allocation; a real GPU comes back",
    async () => {
      const fake = { requestAdapter: async () => null } as unknown as GPU;
      const stale = available ? rand([4, 4], { seed: 1, device: "webgpu" }) : undefined;
      try {
        configureWebGPU({ gpu: fake });
        const a = await reinitialize();
        expect(a.available).toBe(false);
        expect(a.reason).toMatch(/^requestAdapter\(\) returned null/);
        expect(backends.webgpu.isAvailable()).toBe(false);
        expect(backends.webgpu.status().reason).toMatch(/requestAdapter\(\) returned null/);
        expect(() => tensor([1, 2, 3], { device: "webgpu" })).toThrow(DeviceError);
        expect(() => tensor([1, 2, 3], { device: "webgpu" })).toThrow(
          /requestAdapter\(\) returned null/,
        );
        // cpu work is untouched
        const x = rand([3, 3], { seed: 2 });
        expect(explain("matmul", x, x).selected).toBe("reference");
        x.dispose();
      } finally {
        configureWebGPU({ gpu: null });
      }
      const back = await reinitialize();
      expect(back.available).toBe(available);
      await ready(WEBGPU_BACKEND);
      if (stale) {
        // a tensor of the closed device is refused with the reason, not used
        const why = explain("matmul", stale, stale).candidates.find(
          (c) => c.kernel === "wgsl-matmul-tiled",
        )?.reason;
        expect(why).toMatch(/device that was closed/);
        stale.dispose();
        const c = matmul(
          rand([2, 2], { seed: 3, device: "webgpu" }),
          rand([2, 2], { seed: 3, device: "webgpu" }),
        );
        expect((await values(c)).length).toBe(4);
      }
    },
    TIMEOUT,
  );

  gpuIt("backends.webgpu.powerPreference is used at requestAdapter", async () => {
    try {
      backends.webgpu.powerPreference = "low-power";
      expect((await reinitialize()).available).toBe(true);
      expect(webgpuCapability()!.powerPreference).toBe("low-power");
      const a = tensor(
        [
          [1, 2],
          [3, 4],
        ],
        { device: "webgpu" },
      );
      expect(Array.from(await values(matmul(a, a)))).toEqual([7, 10, 15, 22]);
    } finally {
      backends.webgpu.powerPreference = "high-performance";
      await reinitialize();
    }
    expect(webgpuCapability()!.powerPreference).toBe("high-performance");
    expect((await webgpuAvailability()).available).toBe(true);
  });
});
