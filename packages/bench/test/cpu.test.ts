/** The CPU a figure belongs to, read (by the core) from /proc/cpuinfo as Linux writes it. */

import { cpuinfoFields } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { cpuIdentity, cpuText } from "../src/cpu.ts";
import { benchUsage, runBench } from "../src/run.ts";

const ZEN4 = `processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512_vnni avx512_bf16

processor\t: 1
vendor_id\t: AuthenticAMD
`;
const ARM = `processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes sve
CPU implementer\t: 0x41
`;

describe("the CPU of a benchmark run", () => {
  it("reads family, model and the vector extensions from /proc/cpuinfo", () => {
    const c = cpuIdentity(cpuinfoFields(ZEN4), 2);
    expect(c).toEqual({
      model: "AMD EPYC",
      vendor: "AuthenticAMD",
      family: 25,
      modelNumber: 17,
      isa: ["AVX2", "FMA", "AVX-512", "VNNI", "BF16"],
      cores: 2,
    });
    expect(cpuText(c)).toBe("AMD EPYC (family 25 model 17; AVX2 FMA AVX-512 VNNI BF16), 2 cores");
    const arm = cpuIdentity(cpuinfoFields(ARM), 4);
    expect(arm.isa).toEqual(["NEON", "SVE"]);
    expect(cpuText(arm)).toBe("unknown CPU (NEON SVE), 4 cores");
  });

  it("names this machine's CPU", () => {
    const c = cpuIdentity();
    expect(c.model.length).toBeGreaterThan(0);
    expect(c.cores).toBeGreaterThan(0);
  });

  it("all is a suite name; an unknown one is refused with the list", async () => {
    expect(benchUsage()).toMatch(
      / all +the suites with peers \(gemm, conv2d, sdpa, quantized, dispatch\)/,
    );
    const err: string[] = [];
    const code = await runBench(["nope"], {
      out: () => {},
      err: { write: (t: string) => void err.push(t), isTTY: false },
    });
    expect(code).toBe(2);
    expect(err.join("")).toMatch(/suites: .*, all/);
  });
});
