/**
 * The few C library calls this package needs, opened once: the process environment as C
 * code sees it (Bun's process.env does not reach getenv, and OpenBLAS reads
 * OPENBLAS_CORETYPE through it), and memcmp (oneDNN's weight cache compares weights at
 * native speed), and dlopen, to pin a library in memory (see pinLibrary). Undefined where
 * no libc loads.
 */
import { defineLibrary, type NativeLibrary, openLibrary } from "@backplane/core/cpu";

const LIBC_DECL = defineLibrary({
  setenv: { args: ["buffer", "buffer", "i32"], returns: "i32" },
  unsetenv: { args: ["buffer"], returns: "i32" },
  getenv: { args: ["buffer"], returns: "cstring" },
  memcmp: { args: ["pointer", "pointer", "usize"], returns: "i32" },
  // glibc >= 2.34 has dlopen in libc itself (older ones in libdl: pinLibrary then says no).
  dlopen: { args: ["buffer", "i32"], returns: "pointer", optional: true },
});
export type Libc = NativeLibrary<typeof LIBC_DECL>["symbols"];

/** A NUL-terminated C string. */
export function cstr(s: string): Uint8Array {
  return new TextEncoder().encode(`${s}\0`);
}

let opened: Promise<Libc | undefined> | undefined;

export function libc(): Promise<Libc | undefined> {
  opened ??= openLibrary(
    { name: "libc", candidates: ["libc.so.6", "/usr/lib/libSystem.B.dylib"] },
    LIBC_DECL,
  ).then((r) => (r.ok ? r.lib.symbols : undefined));
  return opened;
}

const RTLD_NOW = 2;
const RTLD_NODELETE = 0x1000; // glibc's value

/**
 * Keeps a loaded library mapped until the process ends, whatever the FFI layer unloads at
 * exit. libgomp's idle worker threads live on inside its code: when Node's koffi closes
 * libdnnl and libgomp at exit while those threads still exist, they jump into unmapped
 * memory (a segmentation fault in about half of the exits of a process that ran oneDNN on
 * two threads). Returns whether the pin took (glibc only).
 */
export async function pinLibrary(path: string): Promise<boolean> {
  const c = await libc();
  if (!c?.dlopen) return false;
  return Boolean(c.dlopen(cstr(path), RTLD_NOW | RTLD_NODELETE));
}
