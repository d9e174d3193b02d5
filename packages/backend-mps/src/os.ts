/**
 * The running macOS version: the helper's sysctl kern.osproductversion when it is loaded,
 * else /System/Library/CoreServices/SystemVersion.plist; undefined off macOS.
 */
import { ArgumentError } from "@backplane/core";
import { builtinModule, hostInfo } from "@backplane/core/cpu";
import { currentState } from "./state.ts";

function fromPlist(): [number, number, number] | undefined {
  const fs = builtinModule<{ readFileSync(p: string, e: "utf8"): string }>("node:fs");
  try {
    const text = fs?.readFileSync("/System/Library/CoreServices/SystemVersion.plist", "utf8");
    const m = /<key>ProductVersion<\/key>\s*<string>(\d+)(?:\.(\d+))?(?:\.(\d+))?<\/string>/.exec(
      text ?? "",
    );
    return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
  } catch {
    return undefined;
  }
}

/** [major, minor, patch] of macOS, or undefined elsewhere. */
export function macosVersion(): [number, number, number] | undefined {
  if (hostInfo().platform !== "darwin") return undefined;
  return currentState().helper?.osVersion() ?? fromPlist();
}

function checkPart(name: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw new ArgumentError(
      `mps.isMacosOrNewer: ${name} must be an integer >= 0, got ${String(v)}`,
    );
  return v;
}

/** torch.backends.mps.is_macos_or_newer(major, minor). */
export function isMacosOrNewer(major: number, minor: number): boolean {
  const want = [checkPart("major", major), checkPart("minor", minor)] as const;
  const v = macosVersion();
  if (!v) return false;
  return v[0] > want[0] || (v[0] === want[0] && v[1] >= want[1]);
}
