/**
 * The helper, found and opened once at import (never throws: a missing helper or device
 * is a reason). `loadHelper(path)` opens another one, e.g. the CPU stand-in the tests
 * build; tensors made earlier keep the helper that allocated them.
 */
import { DeviceError, refreshAvailability } from "@backplane/core";
import { hostInfo, openLibrary } from "@backplane/core/cpu";
import { type DeviceFacts, MpsHelper } from "./helper.ts";
import { helperPath } from "./locate.ts";
import { ABI_VERSION, MPS_DECL } from "./native/abi.ts";

export interface MpsState {
  /** The opened helper, when there is a device behind it. */
  helper?: MpsHelper;
  /** Where the helper was loaded from. */
  path?: string;
  /** "metal", or "cpu-stand-in" (tests). */
  implementation?: string;
  device?: DeviceFacts;
  /** Why MPS cannot run here (<= 300 characters). */
  reason?: string;
  /** The loader's full story behind the reason. */
  detail?: string;
}

let state: MpsState = { reason: "the MPS helper has not been probed yet" };

/** macOS 12.3 is the first with MPSGraph's ops this package uses (as PyTorch requires). */
function tooOld(version: [number, number, number] | undefined): string | undefined {
  if (hostInfo().platform !== "darwin" || !version) return undefined;
  const [major, minor] = version;
  if (major > 12 || (major === 12 && minor >= 3)) return undefined;
  return `MPS needs macOS 12.3 or newer; this is macOS ${version.join(".")}`;
}

/** Opens the helper at `path` (or the one for this machine) and its device. */
export async function probe(path?: string): Promise<MpsState> {
  const where = path ? { path } : await helperPath();
  if (!where.path) return { reason: where.reason };
  const r = await openLibrary({ name: "backplane_mps", candidates: [where.path] }, MPS_DECL, {
    searchPaths: [],
    systemSearch: false,
  }).catch((e: unknown) => ({ ok: false as const, reason: String(e), tried: [] }));
  if (!r.ok)
    return {
      path: where.path,
      reason: `the MPS helper did not load: ${r.reason.slice(0, 200)}`,
      detail: r.reason,
    };
  const abi = r.lib.symbols.bp_mps_abi_version();
  if (abi !== ABI_VERSION)
    return {
      path: r.path,
      reason: `the MPS helper at ${r.path} speaks ABI ${abi}, this package ${ABI_VERSION}: reinstall @backplane/backend-mps`,
    };
  const helper = new MpsHelper(r.lib, r.lib.symbols.bp_mps_implementation() ?? "unknown");
  const base = { path: r.path, implementation: helper.implementation };
  const old = tooOld(helper.osVersion());
  if (old) return { ...base, reason: old };
  try {
    helper.init();
    return { ...base, helper, device: helper.device() };
  } catch (e) {
    return { ...base, reason: (e as Error).message.slice(0, 300) };
  }
}

export function currentState(): MpsState {
  return state;
}

/** The helper, or a DeviceError saying why MPS is unavailable. */
export function currentHelper(): MpsHelper {
  if (state.helper) return state.helper;
  throw new DeviceError(`MPS is not available: ${state.reason ?? "no helper"}`);
}

/**
 * Loads another helper (undefined: the one for this machine again) and refreshes every
 * backend's availability. Returns the new state.
 */
export async function loadHelper(path?: string): Promise<MpsState> {
  state = await probe(path);
  refreshAvailability();
  return state;
}

state = await probe();
