/**
 * The package as it is on this (non-Mac) machine with nothing set: the helpers are shipped
 * for both Mac architectures, MPS is unavailable with the short reason, the kernels are
 * registered on device "mps", and the macOS checks answer false.
 */
import { ArgumentError, backends, DeviceError, explain, matmul, randn } from "@backplane/core";
import { getOp } from "@backplane/core/backend";
import { hostInfo } from "@backplane/core/cpu";
import { beforeAll, describe, expect, it } from "vitest";
import { isMacosOrNewer, loadHelper, mpsApi } from "../src/index.ts";

const host = hostInfo();
const onMac = host.platform === "darwin";
const d = onMac ? describe.skip : describe;

d(`backend-mps on ${host.platform}-${host.arch}`, () => {
  beforeAll(async () => {
    // Other test files may have loaded the stand-in in this process (Bun, Deno): reopen
    // the helper this machine would use.
    await loadHelper();
  });

  it("is built (both Mac helpers ship) but not available, with the short reason", () => {
    expect(backends.mps.isBuilt()).toBe(true);
    expect(backends.mps.isAvailable()).toBe(false);
    const reason = backends.mps.status().reason!;
    expect(reason).toBe(
      `MPS needs macOS 12.3+ on Apple silicon or an AMD GPU; this is ${host.platform}-${host.arch}`,
    );
    expect(reason.length).toBeLessThanOrEqual(300);
  });

  it("registers matmul, conv2d, softmax and scaledDotProductAttention kernels on device mps", () => {
    for (const op of [
      "matmul",
      "conv2d",
      "softmax",
      "logSoftmax",
      "scaledDotProductAttention",
      "add",
      "mul",
      "relu",
      "gelu",
    ]) {
      const k = getOp(op)!.kernels.find(
        (x) => x.backend === "mps" && x.name.startsWith("mps-") && x.name !== "mps-cpu-fallback",
      );
      expect(k?.device, op).toBe("mps");
    }
  });

  it("isMacosOrNewer is false off macOS and checks its arguments", () => {
    expect(isMacosOrNewer(14, 0)).toBe(false);
    expect(backends.mps.isMacosOrNewer(14, 0)).toBe(false);
    expect(backends.mps.isMacosOrNewer(0, 0)).toBe(false);
    expect(() => backends.mps.isMacosOrNewer(-1, 0)).toThrow(ArgumentError);
    expect(() => backends.mps.isMacosOrNewer(14, 0.5)).toThrow(ArgumentError);
  });

  it("a tensor cannot go to mps: DeviceError with the reason; explain() says why each kernel is out", () => {
    const x = randn([2, 2]);
    expect(() => x.to("mps")).toThrow(DeviceError);
    expect(() => x.to("mps")).toThrow(/MPS is not available: MPS needs macOS 12\.3\+/);
    expect(() => mpsApi.deviceName()).toThrow(DeviceError);
    const why = explain("matmul", x, x).candidates.find((c) => c.kernel === "mps-matmul");
    // CPU inputs: the mps kernel is out because of the device (and the backend)
    expect(why?.reason).toMatch(/runs on mps|not available/);
    expect(matmul(x, x).device).toBe("cpu");
  });
});
