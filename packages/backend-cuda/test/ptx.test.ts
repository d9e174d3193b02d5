/**
 * The committed PTX (ptx/) is what kernels/*.cu build to:
 * - always: the manifest's source hashes are those of the current sources, its PTX hashes
 *   those of the committed files, and every kernel the TypeScript launches is in it;
 * - when nvcc is installed: scripts/build-kernels.mjs --check rebuilds every kernel into a
 *   temporary directory (nvcc -ptx, then ptxas for sm_80 and sm_90) and compares.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ptxManifest, ptxStatus } from "../src/ptx.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env;

function findNvcc(): string | undefined {
  const dirs = [env?.CUDA_HOME, env?.CUDA_PATH, "/usr/local/cuda"].filter(Boolean);
  const direct = env?.NVCC;
  if (direct && existsSync(direct)) return direct;
  for (const d of dirs) if (existsSync(`${d}/bin/nvcc`)) return `${d}/bin/nvcc`;
  const r = spawnSync("nvcc", ["--version"], { encoding: "utf8" });
  return r.status === 0 ? "nvcc" : undefined;
}

const nvcc = findNvcc();
const itNvcc = nvcc ? it : it.skip;
const nvccNote = nvcc ? `with ${nvcc}` : "(skipped: nvcc not found; set NVCC or CUDA_HOME)";

/** Every kernel the TypeScript sources launch by name. */
const LAUNCHED = [
  "copy2d_b1",
  "copy2d_b2",
  "copy2d_b4",
  "copy2d_b8",
  "copy2d_b16",
  "tri_zero_f32",
  "tri_zero_f64",
  "eye_f32",
  "eye_f64",
  "scale_f32",
  "scale_f64",
  "attn_softmax_f32",
  "attn_softmax_f64",
  "attn_softmax_f16",
  "attn_softmax_bf16",
  "mem_efficient_fwd_f32",
  "mem_efficient_fwd_f16",
  "mem_efficient_fwd_bf16",
  "flash_fwd_f16",
  "flash_fwd_bf16",
  ...["f16", "bf16"].flatMap((t) => [16, 32, 64, 96, 128].map((d) => `flash_tc_fwd_${t}_d${d}`)),
];

describe("the package's PTX", () => {
  const manifest = ptxManifest();

  it("is present: isBuilt() holds", () => {
    expect(typeof manifest).toBe("object");
    expect(ptxStatus()).toEqual({
      built: true,
      modules: Object.keys((manifest as { modules: Record<string, unknown> }).modules),
    });
  });

  it("matches the current kernel sources and the committed files (hashes)", () => {
    if (typeof manifest === "string") throw new Error(manifest);
    const kernels = readdirSync(`${root}/kernels`);
    const headers = kernels.filter((f) => f.endsWith(".cuh")).sort();
    expect(manifest.headers).toEqual(headers);
    const headerText = headers.map((h) => readFileSync(`${root}/kernels/${h}`, "utf8")).join("\n");
    const sources = kernels.filter((f) => f.endsWith(".cu")).sort();
    expect(Object.keys(manifest.modules).sort()).toEqual(sources.map((f) => f.slice(0, -3)));
    for (const [name, m] of Object.entries(manifest.modules)) {
      const source = readFileSync(`${root}/${m.source}`, "utf8");
      expect(
        m.sourceSha256,
        `${m.source} changed since ptx/ was built: run npm run build:kernels`,
      ).toBe(sha256(`${source}\n${headerText}`));
      const ptx = readFileSync(`${root}/ptx/${name}.ptx`, "utf8");
      expect(m.ptxSha256, `ptx/${name}.ptx was edited by hand`).toBe(sha256(ptx));
      const entries = [...ptx.matchAll(/^\.visible \.entry (\w+)\(/gm)].map((x) => x[1]);
      expect(m.functions).toEqual(entries);
      const target = /^\.target (sm_\d+)/m.exec(ptx)![1];
      expect(target).toBe(m.arch.replace("compute_", "sm_"));
    }
  });

  it("has every kernel the TypeScript launches, for compute_75+ (flash: compute_80)", () => {
    if (typeof manifest === "string") throw new Error(manifest);
    const all = Object.values(manifest.modules).flatMap((m) => m.functions);
    for (const k of LAUNCHED) expect(all, k).toContain(k);
    expect(manifest.modules.attention_flash!.arch).toBe("compute_80");
    expect(manifest.modules.attention_flash_tc!.arch).toBe("compute_80"); // mma.sync bf16
    for (const [name, m] of Object.entries(manifest.modules))
      if (!name.startsWith("attention_flash")) expect(m.arch, name).toBe("compute_75");
    expect(manifest.assembledFor).toEqual(["sm_80", "sm_90"]);
  });

  itNvcc(
    `rebuilds to the same bytes ${nvccNote}`,
    () => {
      // Node runs the build script whatever runtime runs this test (the repo requires Node).
      const r = spawnSync("node", [`${root}/scripts/build-kernels.mjs`, "--check"], {
        encoding: "utf8",
        env: { ...env, NVCC: nvcc === "nvcc" ? undefined : nvcc },
      });
      expect(`${r.stderr}`).toContain("ptx/ matches the sources");
      expect(r.status).toBe(0);
    },
    180_000,
  );
});
