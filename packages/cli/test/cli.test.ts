/** The backplane command, run as a user runs it: a spawned process, its output and exit code. */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CASES } from "@backplane/testkit";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const run = (...args: string[]) =>
  spawnSync("node", [cli, ...args], { encoding: "utf8", timeout: 60_000 });

describe("backplane CLI", () => {
  it("is built (npm test builds first)", () => {
    expect(existsSync(cli)).toBe(true);
  });

  it("info prints the report and runs every op", () => {
    const r = run("info");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Backplane \d+\.\d+\.\d+/);
    // No GPU here: cuda is built (the package is installed) but not available, and says why.
    expect(r.stdout).toMatch(
      /cuda\s+built, not available.*\n\s+reason: .*(libcuda\.so\.1 not found|cudaErrorInsufficientDriver)/,
    );
    // Not a Mac: mps is built (both Mac helpers ship) but not available, and says why.
    expect(r.stdout).toMatch(
      /mps\s+built, not available.*\n\s+reason: MPS needs macOS 12\.3\+ on Apple silicon or an AMD GPU; this is linux-x64/,
    );
    expect(r.stdout).toMatch(/matmul\s+\S+ \(\S+\)\s+64x64 @ 64x64\s+[\d.]+\s+[\d.]+e-\d+\s+pass/);
    // Every op the conformance cases cover (multiHeadAttention among them) ran.
    expect(r.stdout).toMatch(/multiHeadAttention\s+\S+ \(\S+\).*\s+pass/);
    expect(r.stdout).toContain(
      `All ${Object.keys(CASES).length} ops ran and matched the reference.`,
    );
    // The quantized ops on the dispatcher's kernels against PyTorch's integers.
    expect(r.stdout).toMatch(/Quantized \(engine none; .* PyTorch 2\.13[^']*'s integers\):/);
    expect(r.stdout).toMatch(/conv2d\s+\S.*\d+ of \d+ cases\s+pass/);
    expect(r.stdout).toMatch(/All \d+ quantized cases matched PyTorch\./);
  });

  it("info --json is one JSON object", () => {
    const r = run("info", "--json");
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(
      j.namespaces.find((n: { name: string }) => n.name === "cudnn").flags.benchmarkLimit,
    ).toBe(10);
    expect(j.ops.every((o: { status: string }) => o.status === "pass")).toBe(true);
    const q = j.quantized.ops as { op: string; passed: number; total: number }[];
    expect(q.map((o) => o.op).sort()).toEqual(
      ["add", "conv2d", "linear", "matmul", "quantize", "relu"].sort(),
    );
    expect(q.every((o) => o.passed === o.total && o.total > 0)).toBe(true);
  });

  it("explain names the choice; an unsupported dtype is bad input, exit 2", () => {
    const ok = run("explain", "matmul", "--shapes", "4x3,3x2");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/matmul: runs \S+/);
    expect(ok.stdout).toMatch(/reference \(reference\)/);
    // matmul refuses int32 with a DTypeError: the user's input, so exit 2 (README).
    const int = run("explain", "matmul", "--shapes", "2x2,2x2", "--dtype", "int32");
    expect(int.status).toBe(2);
    expect(int.stderr).toMatch(/^backplane: DTypeError: .*int32.*\n$/);
  });

  it("explain takes PyTorch's short op names (sdpa, log_softmax)", () => {
    const r = run("explain", "sdpa", "--shapes", "1x2x4x8,1x2x4x8,1x2x4x8");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/scaledDotProductAttention/);
    expect(run("explain", "log_softmax", "--shapes", "3x4").status).toBe(0);
  });

  it("explain --run prints the kernel call it recorded, the same kernel it chose", () => {
    const r = run("explain", "matmul", "--shapes", "5x3,3x2", "--run");
    expect(r.status).toBe(0);
    // CPU work opens no GPU driver: no Vulkan, Dawn or XDG noise on stderr.
    expect(r.stderr).not.toMatch(/Vulkan|Dawn|XDG_RUNTIME_DIR/);
    const chosen = /matmul: runs (\S+)/.exec(r.stdout)?.[1];
    expect(r.stdout).toMatch(/ran:\nop\s+kernel\s+device\s+dtype\s+shape\s+time\n/);
    expect(r.stdout).toMatch(
      new RegExp(`matmul\\s+${chosen} \\(\\S+\\)\\s+cpu\\s+float32\\s+5x3x2\\s+[\\d.]+ ms`),
    );
  });

  it("bad arguments are exit 2 and name the argument", () => {
    const r = run("explain", "matmul", "--shapes", "2xq");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--shapes: "2xq" is not like 2x3/);
    const unknown = run("frobnicate");
    expect(unknown.status).toBe(2);
    // Every command main() dispatches to, bench included (the list comes from its table).
    expect(unknown.stderr).toMatch(
      /^backplane: unknown command "frobnicate"; commands: info, explain, einsum-path, bench, run-cpu, help\n/,
    );
    // An unknown help topic is bad input too (own keys only: toString is not a command).
    const ts = run("help", "toString");
    expect(ts.status).toBe(2);
    expect(ts.stderr).toMatch(/^backplane: help: unknown command "toString"; commands: info, /);
    expect(run("info", "--bogus").stderr).toMatch(/unknown option --bogus/);
    expect(run("help").stdout).toMatch(/Exit codes: 0 ok/);
  });

  it("a missing operand says to add its shape (it said: wrap data with tensor(...))", () => {
    const r = run("explain", "matmul", "--shapes", "2x3");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /^backplane: explain matmul: 1 shape given, and matmul takes another operand \(b\): add its shape to --shapes/,
    );
  });

  it('no command at all prints the help, exit 0 (it said: unknown command "help")', () => {
    const r = run();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^backplane: torch.backends for TypeScript\n\nUsage:/);
    expect(r.stderr).toBe("");
  });

  it("einsum-path takes an equation that begins with the arrow (scalar operands)", () => {
    const r = run("einsum-path", "->", "scalar");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Complete contraction: +->\n/);
  });

  it("explain --dtype int32 reaches the op (randn refused every integer dtype)", () => {
    const r = run("explain", "add", "--shapes", "2x3,2x3", "--dtype", "int32", "--run");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^add: runs \S+/);
    expect(r.stdout).toMatch(/\nadd\s+\S+ \(\S+\)\s+cpu\s+int32\s+2x3,2x3\s+[\d.]+ ms/);
    // An op that takes no integers still says so itself, exit 2.
    const mm = run("explain", "matmul", "--shapes", "2x2,2x2", "--dtype", "int8");
    expect(mm.status).toBe(2);
    expect(mm.stderr).toMatch(/^backplane: DTypeError: matmul: .*int8/);
  });

  it("a value flag given twice is exit 2 with one line", () => {
    const r = run("explain", "matmul", "--shapes", "2x3,3x4", "--shapes", "1x1");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^backplane: --shapes given twice; give it once\n/);
  });

  it("a closed stdout (| true) ends quietly: no unhandled EPIPE stack", () => {
    const r = spawnSync("bash", ["-c", `node ${cli} info --json | true; exit \${PIPESTATUS[0]}`], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(r.status).toBe(0);
  });

  it("BACKPLANE_BACKENDS naming a known package (or one twice) lists it once", () => {
    const r = spawnSync("node", [cli, "info", "--json"], {
      encoding: "utf8",
      timeout: 60_000,
      env: {
        ...process.env,
        BACKPLANE_BACKENDS: "@backplane/backend-openmp, @backplane/nope,@backplane/nope",
      },
    });
    expect(r.status, r.stderr).toBe(0);
    const names = (JSON.parse(r.stdout).packages as { packageName: string }[]).map(
      (p) => p.packageName,
    );
    expect(names).toEqual([...new Set(names)]);
    expect(names).toContain("@backplane/nope");
  });

  it("-h after a command is its help; `help run-cpu` has its own text; -x is exit 2", () => {
    const h = run("explain", "-h");
    expect(h.status).toBe(0);
    expect(h.stdout).toMatch(/^backplane explain <op> --shapes/);
    const rc = run("help", "run-cpu");
    expect(rc.status).toBe(0);
    expect(rc.stdout).toMatch(/^backplane run-cpu \[options\] <script>/);
    const x = run("explain", "matmul", "-x", "--shapes", "2x3,3x4");
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/^backplane: unknown option -x /);
  });

  it("explain einsum: more than 26 dimensions get distinct letters (no made-up diagonal)", () => {
    // 26 dimensions of 2 and one of 3: with letters reused mod 26 the 27th was "a" again,
    // of size 3 against 2 (an ArgumentError for a valid outer product).
    const r = run("explain", "einsum", "--shapes", `${Array(26).fill("2").join("x")},3`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/einsum: runs \S+/);
    const tooMany = run("explain", "einsum", "--shapes", Array(53).fill("1").join("x"));
    expect(tooMany.status).toBe(2);
    expect(tooMany.stderr).toMatch(/53 dimensions in all; einsum has 52 index letters/);
  });

  it("explain of a quantized op is exit 2 with one short line (not a tensor dumped as JSON)", () => {
    const r = run("explain", "quantizedRelu", "--shapes", "2x3");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^backplane: explain: quantizedRelu takes quantized tensors/);
    expect(r.stderr).not.toMatch(/storage/);
  });

  it("explain cholesky --run gets positive definite inputs (randn's failed with a LinalgError)", () => {
    const r = run("explain", "cholesky", "--shapes", "2x5x5", "--run");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\nran:\n[\s\S]*\ncholesky +\S+/);
  });

  it("flags: --run takes no value; a value flag without one is exit 2", () => {
    const first = run("explain", "--run", "matmul", "--shapes", "2x3,3x4");
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/ran:\n/);
    const yes = run("explain", "matmul", "--shapes", "2x3,3x4", "--run", "yes");
    expect(yes.status).toBe(2);
    expect(yes.stderr).toMatch(/one op only/);
    const bare = run("einsum-path", "ij,jk->ik", "2x3", "3x4", "--strategy");
    expect(bare.status).toBe(2);
    expect(bare.stderr).toMatch(/--strategy needs a value/);
  });

  it("shapes are decimal integers per dimension: 2x and 1e1x2 are exit 2", () => {
    for (const s of ["2x", "1e1x2"]) {
      const r = run("einsum-path", "ij,jk->ik", s, "3x4");
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(JSON.stringify(s));
    }
    expect(run("explain", "matmul", "--shapes", "2x3,3x").status).toBe(2);
  });

  it("bad user input is exit 2 with one line and no stack; aliases are own keys only", () => {
    const cases = [
      ["einsum-path", "ij,jk-->ik", "2x3", "3x4"], // malformed equation
      ["einsum-path", "ij,jk->ik", "2x3", "4x4"], // shape mismatch
      ["einsum-path", "ij,jk->ik", "2x3"], // operand count
      ["explain", "matmul", "--shapes", "2x3,4x5"],
    ];
    for (const c of cases) {
      const r = run(...c);
      expect(r.status, c.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/^backplane: (ArgumentError|ShapeError): [^\n]+\n$/);
    }
    const ts = run("explain", "toString", "--shapes", "2");
    expect(ts.status).toBe(2);
    expect(ts.stderr).toMatch(/unknown op "toString"/);
  });

  it("run-cpu prints its plan, and a bad argument is exit 2", () => {
    const plan = run(
      "run-cpu",
      "--dry-run",
      "--ninstances",
      "2",
      "--ncores-per-instance",
      "1",
      cli,
      "help",
    );
    expect(plan.status).toBe(0);
    expect(plan.stdout).toMatch(/run-cpu: 2 instances x 1 core/);
    expect(plan.stdout).toMatch(/instance 1: cores 1, OMP_NUM_THREADS=1/);
    const bad = run("run-cpu", "--ninstances", "x", cli);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--ninstances must be an integer >= 1/);
    expect(run("run-cpu", "--help").stdout).toMatch(/Usage:/);
  });

  it("einsum-path prints the path table; a bad strategy is exit 2", () => {
    const r = run("einsum-path", "ij,jk,kl->il", "10x20", "20x30", "30x5", "--strategy", "optimal");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Naive FLOP count/i);
    const bad = run("einsum-path", "ij,jk->ik", "2x3", "3x4", "--strategy", "fastest");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--strategy "fastest" is not one of auto/);
  });

  it("bench runs a suite: JSON on stdout, one plain line per result on stderr off a terminal", () => {
    const r = run("bench", "dispatch", "--json");
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.suite).toBe("dispatch");
    expect(j.results.length).toBeGreaterThan(3);
    for (const x of j.results) expect(x.median_ms).toBeGreaterThan(0);
    expect(j.ratios.map((x: { name: string }) => x.name)).toContain("overhead_tfjs_over_backplane");
    // The unit follows the machine's load: this checks the line, not the speed.
    expect(r.stderr).toMatch(/^ {2}1x1x1 backplane-dispatch: [\d.]+ (ns|us|ms)$/m);
    expect(r.stderr).not.toContain("\r");
  });

  // util-linux's script(1) gives the command a pseudo-terminal (Debian always has it).
  const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;
  it(`bench draws a progress bar on a terminal${hasScript ? "" : " (not run: no script(1))"}`, () => {
    if (!hasScript) return;
    const r = spawnSync("script", ["-qec", `node ${cli} bench dispatch`, "/dev/null"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    // Each redraw: carriage return, erase the line (ESC [2K), then the bar.
    expect(r.stdout).toContain("\r\u001b[2K[");
    expect(r.stdout).toMatch(/\[#+-*\] +\d+% {2}case 1: 1x1x1/);
    // The table follows (its unit depends on the machine's load: this checks the table, not the speed).
    expect(r.stdout).toMatch(/backplane-dispatch\s+[\d.]+ (ns|us|ms)/);
  });

  it("bench: an unknown suite or option value is exit 2 and names it; --help lists the suites", () => {
    const unknown = run("bench", "nosuch");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(
      /unknown suite "nosuch" \(suites: conv2d, dispatch, einsum, gemm, interleave, quantized, sdpa, all\)/,
    );
    const bad = run("bench", "gemm", "--sizes", "12x");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--sizes: expected positive integers like 256,1024, got 12x/);
    const help = run("bench", "--help");
    expect(help.status).toBe(0);
    for (const s of ["conv2d", "dispatch", "einsum", "gemm", "sdpa"])
      expect(help.stdout).toMatch(new RegExp(`^  ${s} `, "m"));
    expect(run("help", "bench").stdout).toMatch(/backplane bench <suite> \[--json\]/);
  });
});
