/** openLibrary: walk the search plan, load the first file that binds, or say why none did. */
import { ArgumentError } from "../../errors.ts";
import { loadAdapter } from "./adapter.ts";
import { validateDeclaration, validateSpec } from "./decl.ts";
import { hostInfo } from "./runtime.ts";
import { planSearch } from "./search.ts";
import type {
  BoundSymbols,
  LibraryDecl,
  LibrarySpec,
  NativeLibrary,
  OpenOptions,
  OpenResult,
} from "./types.ts";

type Fs = typeof import("node:fs");
let fs: Fs | null | undefined;

async function loadFs(): Promise<Fs | null> {
  if (fs === undefined) {
    try {
      const specifier = "node:fs";
      fs = (await import(specifier)) as Fs;
    } catch {
      fs = null;
    }
  }
  return fs;
}

/** The real path of an existing file, null when it does not exist, undefined when unknown. */
function probe(f: Fs | null, path: string): string | null | undefined {
  if (f === null) return undefined;
  try {
    if (f.statSync(path, { throwIfNoEntry: false }) === undefined) return null;
    return f.realpathSync(path);
  } catch {
    return undefined; // no permission to look: let the loader decide
  }
}

function validateOptions(opts: unknown): asserts opts is OpenOptions {
  if (opts === null || typeof opts !== "object") {
    throw new ArgumentError("openLibrary options must be an object");
  }
  const { searchPaths, systemSearch } = opts as Record<string, unknown>;
  if (
    searchPaths !== undefined &&
    !(Array.isArray(searchPaths) && searchPaths.every((p) => typeof p === "string"))
  ) {
    throw new ArgumentError("openLibrary: searchPaths must be an array of strings");
  }
  if (systemSearch !== undefined && typeof systemSearch !== "boolean") {
    throw new ArgumentError("openLibrary: systemSearch must be a boolean");
  }
}

/**
 * Opens the first library of `spec` that loads and has every required symbol of `decl`, and
 * binds the symbols. A missing library, runtime FFI or symbol is a reason (`ok: false`),
 * never a throw; only a malformed spec, declaration or options rejects (ArgumentError).
 *
 * Search order: the spec's env variable, explicit paths, then per file name (preferred
 * version first) every search directory and the bare name for the OS loader. Files that do
 * not exist are listed in `tried` but not handed to the loader. A file lacking a required
 * symbol does not stop the search; if nothing better is found the reason is
 * `symbol NAME not found in PATH`.
 */
export async function openLibrary<const D extends LibraryDecl>(
  spec: LibrarySpec,
  decl: D,
  opts: OpenOptions = {},
): Promise<OpenResult<D>> {
  validateSpec(spec);
  validateDeclaration(decl);
  validateOptions(opts);
  const plan = planSearch(spec, opts, hostInfo());
  const adapter = await loadAdapter();
  if (typeof adapter === "string")
    return { ok: false, reason: `${spec.name}: ${adapter}`, tried: [] };
  const f = await loadFs();

  const tried: string[] = [];
  const seen = new Set<string>();
  let symbolReason: string | undefined;
  let knownFileError: string | undefined;
  let firstError: string | undefined;
  for (const attempt of plan.attempts) {
    tried.push(attempt.path);
    if (!attempt.system) {
      const real = probe(f, attempt.path);
      if (real === null) continue;
      if (real !== undefined) {
        if (seen.has(real)) continue; // same file through another directory or symlink
        seen.add(real);
      }
    }
    const r = adapter.load(attempt.path, decl);
    if (r.ok) {
      const missing = Object.keys(decl).filter((n) => r.symbols[n] === null);
      let open = true;
      const lib: NativeLibrary<D> = {
        symbols: r.symbols as unknown as BoundSymbols<D>,
        path: attempt.path,
        runtime: adapter.runtime,
        missing,
        close() {
          if (open) {
            open = false;
            r.close();
          }
        },
      };
      return { ok: true, lib, path: attempt.path, runtime: adapter.runtime, missing, tried };
    }
    if (r.kind === "symbol") {
      symbolReason ??= `symbol ${r.symbol} not found in ${attempt.path}`;
    } else {
      firstError ??= r.error;
      // A file that exists but does not load (missing dependency, wrong architecture,
      // permissions) says more than a name the loader could not find.
      if (!attempt.system) knownFileError ??= r.error;
    }
  }
  if (symbolReason !== undefined) return { ok: false, reason: symbolReason, tried };
  const list = tried.length > 0 ? tried.join(", ") : "nothing";
  const error = knownFileError ?? firstError;
  const reason = `${plan.primary} not found (tried: ${list})${error ? `; loader error: ${error}` : ""}`;
  return { ok: false, reason, tried };
}
