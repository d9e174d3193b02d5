/**
 * Where to look for a native library: file names per OS, directories, and the ordered list
 * of attempts. Pure functions of (spec, options, host): the filesystem is reached only
 * through host.listDir (to find Python environments for pip-installed libraries).
 */
import type { HostInfo } from "./runtime.ts";
import type { LibrarySpec, OpenOptions } from "./types.ts";

/** Extra directories searched first on every OS (path-list syntax of the OS). */
export const SEARCH_PATH_ENV = "BACKPLANE_FFI_SEARCH_PATH";

/** One thing to hand to the loader. */
export interface Attempt {
  /** What is passed to dlopen. */
  readonly path: string;
  /** True for a bare file name resolved by the OS loader's own search. */
  readonly system: boolean;
}

export interface SearchPlan {
  /** The most preferred file name, used in messages ("libcudart.so.13 not found"). */
  readonly primary: string;
  readonly attempts: readonly Attempt[];
}

const LIB_FILE = /\.(?:so(?:\.[0-9][0-9A-Za-z.]*)?|dylib|dll)$/i;

function hasSeparator(s: string): boolean {
  return s.includes("/") || s.includes("\\");
}

function delimiter(platform: string): string {
  return platform === "win32" ? ";" : ":";
}

function splitList(value: string | undefined, platform: string): string[] {
  return value ? value.split(delimiter(platform)).filter((s) => s !== "") : [];
}

function unique<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

/** Joins a directory and a file name with the OS separator. */
export function joinPath(dir: string, name: string, platform: string): string {
  if (platform === "win32") return `${dir.replace(/[\\/]+$/, "")}\\${name}`;
  return dir === "/" ? `/${name}` : `${dir.replace(/\/+$/, "")}/${name}`;
}

function linuxTriple(arch: string): string {
  switch (arch) {
    case "x64":
      return "x86_64-linux-gnu";
    case "arm64":
      return "aarch64-linux-gnu";
    case "ia32":
      return "i386-linux-gnu";
    case "arm":
      return "arm-linux-gnueabihf";
    case "ppc64":
      return "powerpc64le-linux-gnu";
    case "riscv64":
      return "riscv64-linux-gnu";
    default:
      return `${arch}-linux-gnu`;
  }
}

/**
 * File names for a candidate, most preferred first. A file name ("libc.so.6") or a path is
 * returned as is; a base name ("cudart") is expanded per OS with the preferred versions first:
 * linux `libcudart.so.13, libcudart.so`; macOS `libcudart.13.dylib, libcudart.dylib`;
 * Windows `cudart13.dll, cudart64_13.dll, cudart.dll, libcudart.dll`.
 */
export function libraryFileNames(
  candidate: string,
  platform: string,
  versions: readonly string[] = [],
): string[] {
  if (hasSeparator(candidate) || LIB_FILE.test(candidate) || /\.so\./.test(candidate)) {
    return [candidate];
  }
  const stem = candidate.startsWith("lib") ? candidate : `lib${candidate}`;
  if (platform === "darwin") {
    return [...versions.map((v) => `${stem}.${v}.dylib`), `${stem}.dylib`];
  }
  if (platform === "win32") {
    const base = candidate;
    return unique([
      ...versions.flatMap((v) => [`${base}${v}.dll`, `${base}64_${v}.dll`]),
      `${base}.dll`,
      `${stem}.dll`,
    ]);
  }
  return [...versions.map((v) => `${stem}.so.${v}`), `${stem}.so`];
}

/**
 * The directories searched by default, in order: BACKPLANE_FFI_SEARCH_PATH, the loader's
 * environment (LD_LIBRARY_PATH / DYLD_*), CUDA roots (CUDA_HOME, CUDA_PATH, CUDA_ROOT,
 * /usr/local/cuda), then the system library directories.
 */
export function defaultSearchDirs(host: HostInfo): string[] {
  const { platform, env } = host;
  const dirs = splitList(env(SEARCH_PATH_ENV), platform);
  const cudaRoots = unique(
    ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"].map((k) => env(k)).filter((v): v is string => !!v),
  );
  if (platform === "win32") {
    dirs.push(...cudaRoots.map((r) => joinPath(r, "bin", platform)));
  } else if (platform === "darwin") {
    dirs.push(
      ...splitList(env("DYLD_LIBRARY_PATH"), platform),
      ...splitList(env("DYLD_FALLBACK_LIBRARY_PATH"), platform),
      ...cudaRoots.map((r) => joinPath(r, "lib", platform)),
      "/opt/homebrew/lib",
      "/usr/local/lib",
      "/usr/lib",
    );
  } else {
    const triple = linuxTriple(host.arch);
    const target =
      host.arch === "arm64" ? "sbsa-linux" : `${host.arch === "x64" ? "x86_64" : host.arch}-linux`;
    dirs.push(
      ...splitList(env("LD_LIBRARY_PATH"), platform),
      ...cudaRoots.flatMap((r) => [joinPath(r, "lib64", platform), joinPath(r, "lib", platform)]),
      "/usr/local/cuda/lib64",
      "/usr/local/cuda/lib",
      `/usr/local/cuda/targets/${target}/lib`,
      "/opt/cuda/lib64",
      "/usr/local/lib",
      `/usr/lib/${triple}`,
      `/lib/${triple}`,
      "/usr/lib64",
      "/lib64",
      "/usr/lib",
      "/lib",
    );
  }
  return unique(dirs);
}

/**
 * The site-packages directories of the Python environments on this host, most specific
 * first: PYTHONPATH entries, then lib/python3.X/{site,dist}-packages of VIRTUAL_ENV,
 * CONDA_PREFIX, ~/.local, /usr/local and /usr (newest Python first), where they exist.
 */
export function pythonSitePackages(host: HostInfo): string[] {
  if (host.platform === "win32") return splitList(host.env("PYTHONPATH"), host.platform);
  const roots = splitList(host.env("PYTHONPATH"), host.platform);
  const home = host.env("HOME");
  const prefixes = [
    host.env("VIRTUAL_ENV"),
    host.env("CONDA_PREFIX"),
    home && `${home}/.local`,
    "/usr/local",
    "/usr",
  ];
  for (const prefix of prefixes) {
    if (!prefix) continue;
    const lib = joinPath(prefix, "lib", host.platform);
    const pythons = (host.listDir?.(lib) ?? []).filter((d) => /^python3\.\d+$/.test(d));
    pythons.sort((a, b) => Number(b.slice(8)) - Number(a.slice(8)));
    for (const py of pythons)
      for (const kind of ["site-packages", "dist-packages"]) roots.push(`${lib}/${py}/${kind}`);
  }
  return unique(roots);
}

/**
 * The ordered attempts for a spec: the spec's env variable (a file, or a directory searched
 * first), explicit paths among the candidates, the spec's pip directories in every Python
 * environment, then for each file name in preference order
 * every directory followed by the bare name (OS loader search). Duplicates are dropped.
 */
export function planSearch(spec: LibrarySpec, opts: OpenOptions, host: HostInfo): SearchPlan {
  const { platform } = host;
  const explicit: string[] = [];
  const envDirs: string[] = [];
  const envValue = spec.env ? host.env(spec.env) : undefined;
  for (const entry of splitList(envValue, platform)) {
    const base = entry.split(/[\\/]/).pop() ?? entry;
    if (LIB_FILE.test(base) || /\.so\./.test(base)) explicit.push(entry);
    else envDirs.push(entry);
  }
  const names: string[] = [];
  for (const c of spec.candidates) {
    if (hasSeparator(c)) explicit.push(c);
    else names.push(...libraryFileNames(c, platform, spec.versions ?? []));
  }
  // pip wheels' directories come before the system's: a wheel is what the user installed for this.
  const pipDirs = spec.pip?.length
    ? pythonSitePackages(host).flatMap((root) => spec.pip!.map((d) => joinPath(root, d, platform)))
    : [];
  const dirs = unique([...envDirs, ...pipDirs, ...(opts.searchPaths ?? defaultSearchDirs(host))]);
  const system = opts.systemSearch !== false;
  const attempts: Attempt[] = explicit.map((path) => ({ path, system: false }));
  for (const name of unique(names)) {
    for (const dir of dirs) attempts.push({ path: joinPath(dir, name, platform), system: false });
    if (system) attempts.push({ path: name, system: true });
  }
  const seen = new Set<string>();
  const deduped = attempts.filter((a) => !seen.has(a.path) && seen.add(a.path));
  return { primary: names[0] ?? explicit[0] ?? spec.name, attempts: deduped };
}
