/**
 * The suites' options as `bench <suite>` reads them: each suite's --help, and every bad
 * argument an exit 2 with one line before anything loads or runs (no suite runs here).
 */
import { describe, expect, it } from "vitest";
import { optionArgs, readOptions } from "../src/options.ts";
import { benchUsage, runBench, suiteArgs, WITH_PEERS } from "../src/run.ts";
import { SUITES } from "../src/suites/index.ts";

/** runBench with its output and errors caught. */
async function bench(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runBench(argv, {
    out: (t) => void out.push(t),
    err: { write: (t: string) => void err.push(t), isTTY: false },
  });
  return { code, out: out.join(""), err: err.join("") };
}

describe("bench options", () => {
  it("an unknown impl is exit 2 with one line naming the valid impls", async () => {
    const gemm = await bench("gemm", "--sizes", "256", "--impls", "nosuch-impl");
    expect(gemm.code).toBe(2);
    expect(gemm.out).toBe("");
    expect(gemm.err).toMatch(
      /^bench gemm: --impls: "nosuch-impl" is not one of backplane-native, backplane-dispatch, backplane-wasm, .*ort-node\n$/,
    );
    const conv = await bench("conv2d", "--impls=backplane-auto,tfjs-wsam");
    expect(conv.code).toBe(2);
    expect(conv.err).toMatch(/^bench conv2d: --impls: "tfjs-wsam" is not one of .*backplane-wt8x8/);
    // conv2d's --impls reads both spellings now (it read only --impls=a,b).
    expect((await bench("conv2d", "--impls", "nope")).code).toBe(2);
  });

  it("an option the suite does not read, or a bad value, is exit 2 naming it", async () => {
    const cases: [string[], RegExp][] = [
      [["sdpa", "--threads=2"], /^bench sdpa: unknown option --threads \(options: --json\)\n$/],
      [["gemm", "--sizez", "256"], /unknown option --sizez \(options: --sizes, --impls, --json\)/],
      [["gemm", "--sizes", "12x"], /--sizes: expected positive integers like 256,1024, got 12x/],
      [["gemm", "extra"], /unexpected argument "extra"/],
      [["conv2d", "--quick=yes"], /--quick takes no value \(got --quick=yes\)/],
      [["gemm", "--json=1"], /--json takes no value \(got --json=1\)/],
      [["conv2d", "--threads=0"], /--threads: expected a whole number >= 1, got 0/],
      [["conv2d", "--impls"], /--impls: expected a,b, got nothing/],
      [["quantized", "--only=both"], /--only: "both" is not one of linear, conv2d/],
      [["all", "--nope"], /^bench all: unknown option --nope/],
      // all hands an option to each suite that reads it: gemm has no backplane-auto.
      [["all", "--impls=backplane-auto"], /^bench all: gemm: --impls: "backplane-auto"/],
    ];
    for (const [argv, want] of cases) {
      const r = await bench(...argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.err, argv.join(" ")).toMatch(want);
      expect(r.err.trimEnd().split("\n"), argv.join(" ")).toHaveLength(1);
    }
  });

  it("bench <suite> --help prints that suite's own options", async () => {
    const help = async (suite: string) => {
      const r = await bench(suite, "--help");
      expect(r.code).toBe(0);
      return r.out;
    };
    const conv = await help("conv2d");
    for (const o of ["--json", "--quick", "--only=text", "--threads=n", "--impls=a,b"])
      expect(conv).toContain(`  ${o} `);
    expect(conv).toContain("backplane-implicit-gemm[wasm-gemm]");
    const gemm = await help("gemm");
    expect(gemm).toMatch(/^ {2}--sizes=a,b +these sizes instead of 256,512,1024,2048$/m);
    expect(gemm).not.toContain("--threads");
    expect(await help("quantized")).toMatch(/^ {2}--only=linear\|conv2d +one half of the suite/m);
    expect(await help("sdpa")).toMatch(/Options:\n {2}--json +print one JSON object/);
    expect(await help("all")).toMatch(/--threads=n +conv2d: threads of Backplane/);
    // No two suites print the same text, and none prints the generic one.
    const texts = await Promise.all(Object.keys(SUITES).map(help));
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts).not.toContain(benchUsage());
    expect((await bench("--help")).out).toBe(benchUsage());
  });

  it("hands a suite its options as --name=value; all, each suite the ones it reads", () => {
    const conv = SUITES.conv2d!.options;
    expect(optionArgs(readOptions(["--impls", "backplane-auto", "--quick"], conv))).toEqual([
      "--impls=backplane-auto",
      "--quick",
    ]);
    const all = suiteArgs(WITH_PEERS, ["--threads", "2", "--only=conv2d"]);
    expect(Object.fromEntries(all)).toEqual({
      gemm: [],
      conv2d: ["--threads=2", "--only=conv2d"],
      sdpa: [],
      quantized: ["--only=conv2d"],
      dispatch: [],
    });
  });
});
