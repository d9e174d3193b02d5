/**
 * The device contract: how a library that runs on a device (cuDNN on "cuda") reaches the
 * device's owner (backend-cuda) without importing it. The owner provides one DeviceContext
 * per device type; the library asks for it by type at the time it runs, and gets a reason
 * instead when no package provides it.
 */

import { DeviceError } from "../errors.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { refreshAvailability } from "./backends.ts";

/** The facts about one device that libraries choose kernels by. */
export interface DeviceProperties {
  index: number;
  name: string;
  /** Compute capability (CUDA) or the device's own version numbers. */
  major: number;
  minor: number;
  totalMemory: number;
}

/** Device memory a library borrows for the length of one operation (workspaces, scratch). */
export interface DeviceBuffer {
  /** The device address of the first byte. */
  readonly ptr: bigint;
  readonly byteLength: number;
  /** Returns the memory; work already enqueued on the device's stream may still use it. */
  free(): void;
}

export interface DeviceContext {
  /** The device type it serves ("cuda"). */
  readonly deviceType: string;
  /** The package providing it, for messages. */
  readonly provider: string;
  /** Why no work can run on this device type here (no driver, no device), or undefined. */
  unavailableReason(): string | undefined;
  deviceCount(): number;
  properties(index: number): DeviceProperties;
  /** Makes the device current on the calling thread (libraries that take no device need it). */
  activate(index: number): void;
  /** The stream every operation on the device is ordered on, as an address (0n: the default). */
  stream(index: number): bigint;
  allocate(index: number, byteLength: number): DeviceBuffer;
  /** The index of the device a tensor lives on ("cuda:1" -> 1). */
  indexOf(t: Tensor): number;
  /** The device address of a tensor's element [0, ..., 0] (its storage plus its offset). */
  address(t: Tensor): bigint;
  /** Blocks until everything enqueued on the device's stream has finished. */
  synchronize(index: number): void;
}

const contexts = new Map<string, DeviceContext>();

/**
 * Makes `ctx` the context of its device type (the device's package does this when imported).
 * Backends whose availability depends on it are asked again, whatever the import order.
 */
export function provideDeviceContext(ctx: DeviceContext): void {
  if (!ctx || typeof ctx.deviceType !== "string" || ctx.deviceType === "")
    throw new DeviceError("provideDeviceContext: the context needs a deviceType");
  contexts.set(ctx.deviceType, ctx);
  refreshAvailability();
}

/** The context of a device type, or undefined when no imported package provides it. */
export function deviceContext(deviceType: string): DeviceContext | undefined {
  return contexts.get(deviceType);
}

/** Removes a provided context (tests; a package that unloads). */
export function withdrawDeviceContext(ctx: DeviceContext): void {
  if (contexts.get(ctx.deviceType) !== ctx) return;
  contexts.delete(ctx.deviceType);
  refreshAvailability();
}
