/**
 * The few C library calls this package needs, opened once: the process environment as C
 * code sees it (Bun's process.env does not reach getenv, and OpenBLAS reads
 * OPENBLAS_CORETYPE through it), and memcmp (oneDNN's weight cache compares weights at
 * native speed). Undefined where no libc loads.
 */
import { defineLibrary, type NativeLibrary, openLibrary } from "@backplane/core/backend";

const LIBC_DECL = defineLibrary({
  setenv: { args: ["buffer", "buffer", "i32"], returns: "i32" },
  unsetenv: { args: ["buffer"], returns: "i32" },
  getenv: { args: ["buffer"], returns: "cstring" },
  memcmp: { args: ["pointer", "pointer", "usize"], returns: "i32" },
});
export type Libc = NativeLibrary<typeof LIBC_DECL>["symbols"];

let opened: Promise<Libc | undefined> | undefined;

export function libc(): Promise<Libc | undefined> {
  opened ??= openLibrary(
    { name: "libc", candidates: ["libc.so.6", "/usr/lib/libSystem.B.dylib"] },
    LIBC_DECL,
  ).then((r) => (r.ok ? r.lib.symbols : undefined));
  return opened;
}
