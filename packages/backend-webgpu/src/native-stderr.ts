/**
 * dawn.node's native code (Dawn, and the Vulkan drivers it opens) writes straight to file
 * descriptor 2 while an adapter is probed: "error: XDG_RUNTIME_DIR is invalid" from Mesa's
 * window-system code, Dawn's "Warning: Vulkan ... required" with the path of its build
 * machine. A user who asked about CPU ops should not read that. While `fn` runs, fd 2 points
 * at a temporary file; then it is put back, the driver's lines are kept for the backend's
 * status().detail, and any other line (the process's own stderr in that window) is written
 * back to stderr. Where libc cannot be opened over FFI (no koffi on Node), `fn` runs as is.
 */
import { builtinModule, defineLibrary, openLibrary } from "@backplane/core/cpu";

const LIBC = defineLibrary({
  dup: { args: ["i32"], returns: "i32" },
  dup2: { args: ["i32", "i32"], returns: "i32" },
  close: { args: ["i32"], returns: "i32" },
});

/** The lines of native driver chatter (Dawn, Mesa, the Vulkan loader), by their look. */
const DRIVER_LINE =
  /XDG_RUNTIME_DIR|Vulkan|vulkan|Dawn|dawn|While initializing adapter|^\s+at \S+ \(.*\.(cpp|cc|h):\d+\)|MESA|Mesa|ICD|libEGL|llvmpipe|lavapipe|SwiftShader/;

let lastDriverOutput = "";

/** What the drivers printed during the last captured call ("" when nothing, or not captured). */
export function driverOutput(): string {
  return lastDriverOutput;
}

export async function withNativeStderrCaptured<T>(fn: () => Promise<T>): Promise<T> {
  lastDriverOutput = "";
  // Through the host's module table, not import(): a browser bundle then has no node:
  // imports to externalize (this runs under Node, Bun and Deno only).
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  const os = builtinModule<typeof import("node:os")>("node:os");
  const opened =
    fs && os
      ? await openLibrary(
          { name: "libc", candidates: ["libc.so.6", "/usr/lib/libSystem.B.dylib"] },
          LIBC,
        )
      : undefined;
  if (!fs || !os || !opened?.ok) return fn();
  const c = opened.lib.symbols;
  const path = `${os.tmpdir()}/backplane-webgpu-stderr-${process.pid}-${Date.now()}.log`;
  const file = fs.openSync(path, "w+", 0o600);
  const saved = c.dup(2);
  if (saved < 0 || c.dup2(file, 2) < 0) {
    if (saved >= 0) c.close(saved);
    fs.closeSync(file);
    fs.rmSync(path, { force: true });
    return fn();
  }
  try {
    return await fn();
  } finally {
    c.dup2(saved, 2);
    c.close(saved);
    fs.closeSync(file);
    const lines = fs
      .readFileSync(path, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
    fs.rmSync(path, { force: true });
    const other = lines.filter((l) => !DRIVER_LINE.test(l));
    if (other.length) process.stderr.write(`${other.join("\n")}\n`);
    lastDriverOutput = lines.filter((l) => DRIVER_LINE.test(l)).join("\n");
  }
}
