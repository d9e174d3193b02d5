/**
 * What the package ships for Macs, checked on Linux: both prebuilt helpers are Mach-O
 * dylibs for their architecture (macOS 12.3+, arm64 code-signed), match the manifest's
 * hashes and export every function the FFI declares; the MSL sources parse, and a syntax
 * error in one fails the build. (.ci/run also rebuilds the helpers with zig and compares
 * them byte for byte: npm run build:helper -- --check.)
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script, untyped
import { checkMsl } from "../scripts/build-helper.mjs";
import { MPS_DECL } from "../src/native/abi.ts";
import { EXPECT_STANDIN } from "./helpers.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(root, "prebuilt", "manifest.json"), "utf8")) as {
  zig: string;
  helpers: Record<string, { target: string; sha256: string; bytes: number }>;
};

const CPU = { "darwin-arm64": 0x0100000c, "darwin-x64": 0x01000007 } as const;
const LC_BUILD_VERSION = 0x32;
const LC_CODE_SIGNATURE = 0x1d;
const LC_ID_DYLIB = 0x0d;

interface MachO {
  cpu: number;
  filetype: number;
  commands: Map<number, DataView>;
}

function parseMachO(bytes: Uint8Array): MachO {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(v.getUint32(0, true)).toBe(0xfeedfacf); // MH_MAGIC_64, little-endian
  const commands = new Map<number, DataView>();
  let at = 32;
  for (let i = 0; i < v.getUint32(16, true); i++) {
    const cmd = v.getUint32(at, true);
    const size = v.getUint32(at + 4, true);
    commands.set(cmd, new DataView(bytes.buffer, bytes.byteOffset + at, size));
    at += size;
  }
  return { cpu: v.getUint32(4, true), filetype: v.getUint32(12, true), commands };
}

describe("the prebuilt Mac helpers", () => {
  for (const platform of ["darwin-arm64", "darwin-x64"] as const) {
    it(`${platform}: a Mach-O dylib for macOS 12.3+, as the manifest says, exporting every declared function`, () => {
      const bytes = readFileSync(join(root, "prebuilt", platform, "libbackplane_mps.dylib"));
      const entry = manifest.helpers[platform]!;
      expect(createHash("sha256").update(bytes).digest("hex")).toBe(entry.sha256);
      expect(bytes.length).toBe(entry.bytes);
      const m = parseMachO(new Uint8Array(bytes));
      expect(m.cpu).toBe(CPU[platform]);
      expect(m.filetype).toBe(6); // MH_DYLIB
      const build = m.commands.get(LC_BUILD_VERSION)!;
      expect(build.getUint32(8, true)).toBe(1); // PLATFORM_MACOS
      expect(build.getUint32(12, true)).toBe((12 << 16) | (3 << 8)); // minos 12.3
      // Apple silicon refuses unsigned code: the linker's ad-hoc signature must be there.
      if (platform === "darwin-arm64") expect(m.commands.has(LC_CODE_SIGNATURE)).toBe(true);
      const id = m.commands.get(LC_ID_DYLIB)!;
      const name = new TextDecoder().decode(
        new Uint8Array(
          id.buffer,
          id.byteOffset + id.getUint32(8, true),
          id.byteLength - id.getUint32(8, true),
        ),
      );
      expect(name.replace(/\0+$/, "")).toBe("@rpath/libbackplane_mps.dylib");
      const text = new TextDecoder("latin1").decode(bytes);
      const missing = Object.keys(MPS_DECL).filter((f) => !text.includes(`_${f}\0`));
      expect(missing).toEqual([]);
      // The build staging directory must not leak into the bytes (reproducibility).
      expect(text).not.toMatch(/backplane-mps-build-/);
    });
  }
});

const haveCxx = ["c++", "g++", "clang++"].some(
  (c) => spawnSync(c, ["--version"], { stdio: "ignore" }).status === 0,
);
if (!haveCxx) {
  if (EXPECT_STANDIN)
    throw new Error("BACKPLANE_EXPECT_MPS_STANDIN=1 but there is no C++ compiler");
  console.log("[backend-mps] MSL parse tests skipped: no C++ compiler (apt-get install g++)");
}

describe.skipIf(!haveCxx)("the MSL sources", () => {
  it("parse, and a syntax error fails the check", () => {
    expect(() => checkMsl()).not.toThrow();
    const dir = mkdtempSync(join(tmpdir(), "backplane-msl-"));
    try {
      copyFileSync(join(root, "native", "strided_copy.metal"), join(dir, "ok.metal"));
      const broken = readFileSync(join(root, "native", "strided_copy.metal"), "utf8").replace(
        "pos += long(rest % ulong(size)) * p.strides[d];",
        "pos += long(rest % ulong(size)) * p.strides[d]",
      );
      writeFileSync(join(dir, "broken.metal"), broken);
      expect(() => checkMsl(dir)).toThrow(/broken\.metal/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
