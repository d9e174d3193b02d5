/**
 * Finding and opening libcudnn.so.9: BACKPLANE_CUDNN_PATH (the file or its directory), the
 * `nvidia/cudnn/lib` directory of a pip install of nvidia-cudnn-cu13 / -cu12 in any Python
 * environment (core's FFI search), then the system library path. libcudnn.so.9 loads its
 * sub-libraries (graph, engines, heuristics) from its own directory.
 */
import {
  builtinModule,
  hostInfo,
  type LibrarySpec,
  type OpenResult,
  openLibrary,
} from "@backplane/core/cpu";
import { CUDNN_DECL, type CudnnDecl } from "./api.ts";

export const CUDNN_ENV = "BACKPLANE_CUDNN_PATH";

export const CUDNN_SPEC: LibrarySpec = {
  name: "cudnn",
  candidates: ["cudnn"],
  versions: ["9"],
  env: CUDNN_ENV,
  pip: ["nvidia/cudnn/lib"],
};

/** The include directory beside a loaded library (pip's nvidia/cudnn/include), if it exists. */
export function includeDirOf(libraryPath: string): string | undefined {
  const fs = builtinModule<{ existsSync(p: string): boolean }>("node:fs");
  const dir = libraryPath.replace(/\/[^/]*$/, "").replace(/\/lib(64)?$/, "/include");
  return fs?.existsSync(`${dir}/cudnn_graph.h`) ? dir : undefined;
}

/** Opens libcudnn (never throws: a missing library is a reason). */
export async function openCudnn(): Promise<OpenResult<CudnnDecl>> {
  if (hostInfo().platform === "darwin")
    return { ok: false, reason: "cuDNN does not exist for macOS", tried: [] };
  return openLibrary(CUDNN_SPEC, CUDNN_DECL);
}
