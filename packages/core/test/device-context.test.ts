/**
 * Core's device contract: a context provided for a device type is what deviceContext()
 * returns, withdrawing it leaves none, and backends whose availability depends on it are
 * asked again either way (a library imported before the device's package sees it arrive).
 */
import {
  type DeviceContext,
  defineBackend,
  deviceContext,
  provideDeviceContext,
  registerBackend,
  withdrawDeviceContext,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { availabilityOf, getBackend } from "../src/registry/backends.ts";

const ctx = (deviceType: string): DeviceContext => ({
  deviceType,
  provider: "test",
  unavailableReason: () => undefined,
  deviceCount: () => 1,
  properties: (index) => ({ index, name: "test device", major: 1, minor: 0, totalMemory: 0 }),
  activate: () => {},
  stream: () => 0n,
  allocate: (_i, byteLength) => ({ ptr: 0n, byteLength, free: () => {} }),
  indexOf: () => 0,
  address: () => 0n,
  synchronize: () => {},
});

describe("device contexts", () => {
  it("provide, look up, withdraw; availability that depends on one follows it", () => {
    registerBackend(
      defineBackend({
        name: "ctx-user-test",
        devices: ["ctxdev"],
        isAvailable: () =>
          deviceContext("ctxdev")
            ? { available: true }
            : { available: false, reason: "no ctxdev context: import its package" },
      }),
    );
    const status = () => availabilityOf(getBackend("ctx-user-test")!);
    expect(deviceContext("ctxdev")).toBeUndefined();
    expect(status().available).toBe(false);
    const c = ctx("ctxdev");
    provideDeviceContext(c);
    expect(deviceContext("ctxdev")).toBe(c);
    expect(status().available).toBe(true);
    withdrawDeviceContext(c);
    expect(deviceContext("ctxdev")).toBeUndefined();
    expect(status().available).toBe(false);
  });

  it("a context without a device type is refused", () => {
    expect(() => provideDeviceContext({ ...ctx("x"), deviceType: "" })).toThrow(/deviceType/);
  });
});
