/**
 * One wording for a library that would not load, whatever the runtime: `PATH: what the OS
 * loader said`, as glibc's dlerror() puts it ("libfoo.so: cannot open shared object file: No
 * such file or directory"). Each FFI wraps the loader's text its own way: koffi drops the
 * path ("Failed to load shared library: ..."), bun:ffi names it twice and turns a bare name
 * into a path under the working directory ('Failed to open library "x": /cwd/x: ...'), and
 * Deno repeats its prefix ("Could not open library: Could not open library: ...").
 */

const WRAPPERS =
  /^(?:Could not open library: |Failed to open library "[^"]*": |Failed to load shared library: )/;

/** `raw` (one runtime's message for loading `path`) as `PATH: the loader's own words`. */
export function loaderError(path: string, raw: string): string {
  let detail = raw.trim();
  while (WRAPPERS.test(detail)) detail = detail.replace(WRAPPERS, "");
  // The loader's own "NAME: " prefix, where NAME is the path, or the path bun:ffi made of a bare name.
  const colon = detail.indexOf(": ");
  if (colon > 0) {
    const named = detail.slice(0, colon);
    if (named === path || named.endsWith(`/${path}`) || named.endsWith(`\\${path}`))
      detail = detail.slice(colon + 2);
  }
  return `${path}: ${detail}`;
}
