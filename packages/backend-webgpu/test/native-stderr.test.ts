/**
 * dawn.node's drivers write to file descriptor 2 while an adapter is probed; the probe runs
 * with fd 2 captured. Checked with real native writes (libc's write() over FFI): the driver's
 * lines are kept for status().detail, any other line goes back to stderr, fd 2 is restored.
 */
import { defineLibrary, openLibrary } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { driverOutput, withNativeStderrCaptured } from "../src/native-stderr.ts";

const LIBC = defineLibrary({ write: { args: ["i32", "buffer", "usize"], returns: "i64" } });
const opened = await openLibrary({ name: "libc", candidates: ["libc.so.6"] }, LIBC);
const writeFd2 = (text: string) => {
  if (!opened.ok) throw new Error(opened.reason);
  const bytes = new TextEncoder().encode(text);
  opened.lib.symbols.write(2, bytes, bytes.length);
};

describe("native stderr during the adapter probe", () => {
  (opened.ok ? it : it.skip)(
    "driver lines are kept, other lines written back, fd 2 restored",
    async () => {
      const written: string[] = [];
      const original = process.stderr.write;
      process.stderr.write = ((chunk: unknown) => {
        written.push(String(chunk));
        return true;
      }) as typeof process.stderr.write;
      let value: number;
      try {
        value = await withNativeStderrCaptured(async () => {
          writeFd2("error: XDG_RUNTIME_DIR is invalid or not set in the environment.\n");
          writeFd2("Warning: Vulkan shaderUniform*ArrayDynamicIndexing required.\n");
          writeFd2(
            "    at InitializeImpl (/build/dawn/src/dawn/native/vulkan/PhysicalDeviceVk.cpp:257)\n",
          );
          writeFd2("the user's own line\n");
          return 42;
        });
      } finally {
        process.stderr.write = original;
      }
      expect(value).toBe(42);
      expect(driverOutput().split("\n")).toEqual([
        "error: XDG_RUNTIME_DIR is invalid or not set in the environment.",
        "Warning: Vulkan shaderUniform*ArrayDynamicIndexing required.",
        "    at InitializeImpl (/build/dawn/src/dawn/native/vulkan/PhysicalDeviceVk.cpp:257)",
      ]);
      expect(written.join("")).toBe("the user's own line\n");
      // fd 2 is the process's stderr again: a native write after the probe is not captured.
      await withNativeStderrCaptured(async () => 0);
      expect(driverOutput()).toBe("");
    },
  );
});
