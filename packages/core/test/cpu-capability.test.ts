/**
 * backends.cpu.getCpuCapability() as torch 2.13 answers: the CPU's AVX512 / AVX2 / DEFAULT
 * (never "NO AVX", which torch's x86 wheels do not return), and ATEN_CPU_CAPABILITY's
 * override ("default", "avx2", "avx512", ... as written; anything else warned about and
 * ignored, as torch's `TORCH_WARN("ignoring invalid value for ATEN_CPU_CAPABILITY")`).
 */
import { readFileSync } from "node:fs";
import { backends } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { capabilityFromEnv } from "../src/runtime/cpu-capability.ts";

describe("getCpuCapability", () => {
  it("reports this CPU's level from its flags, as torch does", () => {
    const cap = backends.cpu.getCpuCapability();
    let flags: string[] = [];
    try {
      flags = (/^flags\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "").split(
        " ",
      );
    } catch {}
    if (process.arch === "x64" && flags.length > 1 && !process.env.ATEN_CPU_CAPABILITY) {
      const avx512 = ["avx512f", "avx512bw", "avx512vl", "avx512dq"].every((f) =>
        flags.includes(f),
      );
      const avx2 = flags.includes("avx2") && flags.includes("fma");
      expect(cap).toBe(avx512 ? "AVX512" : avx2 ? "AVX2" : "DEFAULT");
    }
    expect(cap).not.toBe("NO AVX");
  });

  it("takes ATEN_CPU_CAPABILITY's values as torch reads them", () => {
    expect(capabilityFromEnv("default")).toBe("DEFAULT");
    expect(capabilityFromEnv("avx2")).toBe("AVX2");
    expect(capabilityFromEnv("avx512")).toBe("AVX512");
    expect(capabilityFromEnv("zvector")).toBe("Z VECTOR");
    expect(capabilityFromEnv(undefined)).toBeUndefined();
    expect(capabilityFromEnv("")).toBeUndefined();
    const warned: string[] = [];
    const prev = console.warn;
    console.warn = (...a: unknown[]) => void warned.push(a.join(" "));
    try {
      expect(capabilityFromEnv("AVX2")).toBeUndefined(); // torch compares case-sensitively
      expect(capabilityFromEnv("avx1024")).toBeUndefined();
    } finally {
      console.warn = prev;
    }
    expect(warned.join("\n")).toMatch(/ignoring invalid value for ATEN_CPU_CAPABILITY: avx1024/);
  });
});
