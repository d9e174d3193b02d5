/**
 * Finding and opening libcudnn.so.9: BACKPLANE_CUDNN_PATH (the file or its directory), the
 * `nvidia/cudnn/lib` directory of a pip install of nvidia-cudnn-cu13 / -cu12 (PYTHONPATH
 * entries, the active virtualenv or conda environment, the user's and the system's
 * site-packages), then the system library path. libcudnn.so.9 loads its sub-libraries
 * (graph, engines, heuristics) from its own directory.
 */
import {
  builtinModule,
  defaultSearchDirs,
  hostInfo,
  type LibrarySpec,
  type OpenResult,
  openLibrary,
  readEnv,
} from "@backplane/core/backend";
import { CUDNN_DECL, type CudnnDecl } from "./api.ts";

export const CUDNN_ENV = "BACKPLANE_CUDNN_PATH";

export const CUDNN_SPEC: LibrarySpec = {
  name: "cudnn",
  candidates: ["cudnn"],
  versions: ["9"],
  env: CUDNN_ENV,
};

interface FsLike {
  existsSync(p: string): boolean;
  readdirSync(p: string): string[];
}

/** Site-packages style directories that may hold a pip-installed `nvidia/cudnn`. */
export function pythonRoots(env: (k: string) => string | undefined = readEnv): string[] {
  const fs = builtinModule<FsLike>("node:fs");
  const roots: string[] = [];
  for (const p of (env("PYTHONPATH") ?? "").split(":")) if (p) roots.push(p);
  const prefixes = [
    env("VIRTUAL_ENV"),
    env("CONDA_PREFIX"),
    env("HOME") && `${env("HOME")}/.local`,
    "/usr/local",
    "/usr",
  ];
  for (const prefix of prefixes) {
    if (!prefix || !fs) continue;
    const lib = `${prefix}/lib`;
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(lib).filter((d) => /^python3\.\d+$/.test(d));
    } catch {
      continue;
    }
    for (const py of entries.sort().reverse())
      for (const kind of ["site-packages", "dist-packages"]) roots.push(`${lib}/${py}/${kind}`);
  }
  return roots;
}

/** The directories searched before the system's: pip's nvidia/cudnn/lib in every Python root. */
export function cudnnSearchDirs(env?: (k: string) => string | undefined): string[] {
  const fs = builtinModule<FsLike>("node:fs");
  const dirs = pythonRoots(env).map((r) => `${r}/nvidia/cudnn/lib`);
  return fs ? dirs.filter((d) => fs.existsSync(d)) : dirs;
}

/** The include directory beside a loaded library (pip's nvidia/cudnn/include), if it exists. */
export function includeDirOf(libraryPath: string): string | undefined {
  const fs = builtinModule<FsLike>("node:fs");
  const dir = libraryPath.replace(/\/[^/]*$/, "").replace(/\/lib(64)?$/, "/include");
  return fs?.existsSync(`${dir}/cudnn_graph.h`) ? dir : undefined;
}

/** Opens libcudnn (never throws: a missing library is a reason). */
export async function openCudnn(): Promise<OpenResult<CudnnDecl>> {
  if (hostInfo().platform === "darwin")
    return { ok: false, reason: "cuDNN does not exist for macOS", tried: [] };
  const searchPaths = [...cudnnSearchDirs(), ...defaultSearchDirs(hostInfo())];
  return openLibrary(CUDNN_SPEC, CUDNN_DECL, { searchPaths });
}
