/**
 * The Pythons that can import torch, newest torch first: BACKPLANE_TORCH_PYTHON, the venv
 * `npm run bench:torch` makes (PyTorch 2.13's CPU wheel in ~/.cache/backplane/torch-venv),
 * then the system's python3 (Debian's python3-torch is 1.13). The suites time the first as
 * "torch" and keep an older one as a second column when it is installed.
 */
import { builtinModule, readEnv, userCacheDir } from "@backplane/core/cpu";

export interface TorchPython {
  python: string;
  /** torch.__version__, e.g. "2.13.0+cpu". */
  version: string;
}

type ChildProcess = typeof import("node:child_process");

/** Where `npm run bench:torch` puts its venv. */
export function torchVenvPython(): string | undefined {
  const base = userCacheDir();
  return base ? `${base}/torch-venv/bin/python` : undefined;
}

let found: TorchPython[] | undefined;

/** Every distinct torch found, newest first (empty when none). */
export function torchPythons(): TorchPython[] {
  if (found) return found;
  const cp = builtinModule<ChildProcess>("node:child_process");
  const out: TorchPython[] = [];
  const candidates = [
    readEnv("BACKPLANE_TORCH_PYTHON"),
    torchVenvPython(),
    "/usr/bin/python3",
    "python3",
  ];
  for (const python of candidates) {
    if (!python || !cp) continue;
    const r = cp.spawnSync(python, ["-c", "import torch; print(torch.__version__)"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    const version = r.status === 0 ? String(r.stdout).trim().split("\n").pop() : undefined;
    if (version && !out.some((t) => t.version === version)) out.push({ python, version });
  }
  const major = (v: string) => v.split(/[.+]/).map((x) => Number.parseInt(x, 10) || 0);
  out.sort((a, b) => {
    const [x, y] = [major(a.version), major(b.version)];
    return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
  });
  found = out;
  return out;
}

/**
 * Python lines (no indentation) that put PyTorch's process in glibc's steady state before
 * timing: glibc maps every block at or above its mmap threshold afresh (page faults on
 * each call) and raises the threshold only when a larger mapped block is freed, so until
 * then buffers of 1-16 MiB pay for fresh pages at every call (MobileNet's dw 32 @112: 2.5
 * ms instead of 0.23, torch 2.13, Zen 4). Freeing a 16 MiB block raises it past them.
 */
export const TORCH_STEADY_STATE = `del_me = torch.empty(16 << 20, dtype=torch.uint8)
del del_me`;

/** Why no torch is found, with the command that installs one. */
export const NO_TORCH =
  "no Python with torch found; `npm run bench:torch` installs PyTorch 2.13 (CPU wheel) into ~/.cache/backplane/torch-venv";
