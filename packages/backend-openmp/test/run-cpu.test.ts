import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArgumentError, backends } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  formatCoreList,
  parseCoreList,
  planRunCpu,
  RUN_CPU_USAGE,
  RunCpuUsageError,
  runCpu,
} from "../src/index.ts";
import { runtimeName } from "./helpers.ts";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    options: { log: (l: string) => out.push(l), error: (l: string) => err.push(l) },
  };
}

describe("run-cpu (backends.xeon.runCpu)", () => {
  it("prints the plan with --dry-run: instances, cores, environment, command lines", async () => {
    const c = capture();
    const code = await runCpu(
      [
        "--ninstances",
        "2",
        "--ncores-per-instance",
        "1",
        "--core-list",
        "0-1",
        "--dry-run",
        "app.js",
        "--size",
        "8",
      ],
      { ...c.options, cores: [0, 1] },
    );
    expect(code).toBe(0);
    expect(c.out[0]).toMatch(
      /^run-cpu: 2 instances x 1 core of 2 available \(0-1\), runtime (node|bun|deno)/,
    );
    expect(c.out).toHaveLength(3);
    expect(c.out[1]).toMatch(/instance 0: cores 0, OMP_NUM_THREADS=1: .*app\.js --size 8$/);
    expect(c.out[2]).toMatch(/instance 1: cores 1, OMP_NUM_THREADS=1: .*app\.js --size 8$/);
    const six = { cores: [0, 1, 2, 3, 4, 5] };
    const plan = planRunCpu(["--ninstances=2", "--core-list=0-1", "app.js"], six);
    expect(plan.instances.map((i) => i.cores)).toEqual([[0], [1]]);
    expect(plan.instances[1].env).toMatchObject({
      OMP_NUM_THREADS: "1",
      MKL_NUM_THREADS: "1",
      BACKPLANE_INSTANCE_INDEX: "1",
      BACKPLANE_NINSTANCES: "2",
      BACKPLANE_CORE_LIST: "1",
    });
    if (plan.taskset) {
      expect(plan.instances[0].command.slice(0, 3)).toEqual([plan.taskset, "-c", "0"]);
      expect(c.out[0]).toMatch(/pinned with .*taskset -c/);
    } else expect(plan.note).toMatch(/not pinned/);
    if (runtimeName === "deno") expect(plan.instances[0].command).toContain("run");
    const off = planRunCpu(["--disable-taskset", "--core-list", "0-3", "--latency-mode", "x.js"]);
    expect(off.taskset).toBeUndefined();
    expect(off.note).toMatch(/--disable-taskset/);
    expect(off.ncoresPerInstance).toBe(4);
    expect(
      planRunCpu(["--throughput-mode", "--core-list", "0-5", "x.js"], six).instances,
    ).toHaveLength(1);
    expect(
      planRunCpu(
        ["--ninstances", "3", "--core-list", "0-5", "--instance-idx", "2", "x.js"],
        six,
      ).instances.map((i) => i.cores),
    ).toEqual([[4, 5]]);
  });

  it("--help prints the usage", async () => {
    const c = capture();
    expect(await runCpu(["--help"], c.options)).toBe(0);
    expect(c.out.join("\n")).toBe(RUN_CPU_USAGE);
    expect(await runCpu(["-h"], c.options)).toBe(0);
  });

  it("bad arguments: exit code 2 and a message naming the argument", async () => {
    const cases: [string[], string, RegExp][] = [
      [[], "<script>", /name the script/],
      // The option took the script as its value: that value is the error, not a missing script.
      [
        ["--ninstances", "a.js"],
        "--ninstances",
        /--ninstances must be an integer >= 1, got "a.js"/,
      ],
      [["--instance-idx", "a.js"], "--instance-idx", /--instance-idx must be an integer >= 0/],
      [
        ["--ninstances", "zero", "a.js"],
        "--ninstances",
        /--ninstances must be an integer >= 1, got "zero"/,
      ],
      [["--ninstances", "0", "a.js"], "--ninstances", /--ninstances must be an integer >= 1/],
      [["--ncores-per-instance"], "--ncores-per-instance", /--ncores-per-instance needs a value/],
      [
        ["--ninstances", "2", "--ncores-per-instance", "4", "--core-list", "0-3", "a.js"],
        "--ncores-per-instance",
        /needs 8 cores, but only 4 are available/,
      ],
      [["--bogus", "a.js"], "--bogus", /unknown option --bogus/],
      [["--core-list", "3-1", "a.js"], "--core-list", /runs backwards/],
      [["--core-list", "x", "a.js"], "--core-list", /is not a core or a range/],
      [["--runtime", "python", "a.js"], "--runtime", /node, bun or deno/],
      [
        ["--ninstances", "2", "--core-list", "0-1", "--instance-idx", "2", "a.js"],
        "--instance-idx",
        /out of range/,
      ],
      [
        ["--latency-mode", "--throughput-mode", "a.js"],
        "--latency-mode",
        /cannot be used together/,
      ],
      [["--dry-run=yes", "a.js"], "--dry-run", /takes no value/],
    ];
    for (const [argv, argument, message] of cases) {
      let thrown: unknown;
      try {
        planRunCpu(argv, { cores: [0, 1, 2, 3] });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, argv.join(" ")).toBeInstanceOf(RunCpuUsageError);
      expect((thrown as RunCpuUsageError).argument).toBe(argument);
      expect((thrown as Error).message).toMatch(message);
      const c = capture();
      expect(await runCpu(argv, c.options)).toBe(2);
      expect(c.err.join("\n")).toMatch(/run-cpu --help/);
    }
  });

  it("a core list beyond the machine is a usage error (exit 2), not a RangeError", async () => {
    const c = capture();
    const code = await runCpu(["--core-list", "0-99999999999", "--dry-run", "x.js"], c.options);
    expect(code).toBe(2);
    expect(c.err.join("\n")).toMatch(/--core-list: core 99999999999 .* above the highest core/);
    expect(() => parseCoreList("70000")).toThrow(RunCpuUsageError);
    const plan = (argv: string[]) =>
      planRunCpu(argv, { cores: [0, 1], env: { PATH: "/usr/bin:/bin" } });
    // Pinned (Linux with taskset): cores outside the affinity mask are refused up front.
    const pinned = !plan(["--core-list", "0", "x.js"]).note;
    if (pinned) {
      let thrown: unknown;
      try {
        plan(["--core-list", "0-3", "x.js"]);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(RunCpuUsageError);
      expect((thrown as RunCpuUsageError).argument).toBe("--core-list");
      expect((thrown as Error).message).toMatch(
        /cores 2-3 are not among the cores this process may run on \(0-1\)/,
      );
      const c2 = capture();
      expect(
        await runCpu(["--core-list", "0-3", "--dry-run", "x.js"], { ...c2.options, cores: [0, 1] }),
      ).toBe(2);
    }
    // Not pinned: the list is only a thread count, so it is accepted.
    expect(plan(["--disable-taskset", "--core-list", "0-3", "x.js"]).cores).toEqual([0, 1, 2, 3]);
  });

  it("bad options are typed errors naming them; null options are the defaults", async () => {
    const plan = (cores: unknown) =>
      planRunCpu(["--disable-taskset", "x.js"], { cores: cores as number[] });
    // (a number used to be a TypeError; the others went into taskset -c and OMP_NUM_THREADS)
    for (const cores of [5, ["0", "1"], [-1], [0.5, 1], [Number.NaN], [8192], null]) {
      let thrown: unknown;
      try {
        plan(cores);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, String(cores)).toBeInstanceOf(RunCpuUsageError);
      expect((thrown as RunCpuUsageError).argument).toBe("cores");
      expect((thrown as Error).message).toMatch(/options\.cores must be an array of core numbers/);
    }
    expect(() => plan([])).toThrow(/options\.cores is empty/);
    // Repeats and order do not matter, as in --core-list.
    expect(plan([3, 1, 1, 2]).instances[0].env.OMP_NUM_THREADS).toBe("3");
    expect(plan([3, 1, 1, 2]).cores).toEqual([1, 2, 3]);
    // 2^53 and more is not the number written.
    expect(() => planRunCpu(["--instance-idx", "99999999999999999999", "x.js"])).toThrow(
      /--instance-idx must be an integer >= 0, got "99999999999999999999"/,
    );
    expect(() => planRunCpu(["x.js"], null)).not.toThrow();
    const c = capture();
    expect(await runCpu(["--dry-run", "x.js"], { ...c.options, cores: [0] })).toBe(0);
    const badRun: [object, RegExp][] = [
      [{ log: 5 }, /options\.log must be a function/],
      [{ error: "stderr" }, /options\.error must be a function/],
      [{ output: "pipe" }, /options\.output must be "inherit" or "capture", got "pipe"/],
      [{ cwd: 7 }, /options\.cwd must be a directory path/],
    ];
    for (const [options, message] of badRun) {
      const run = runCpu(["--dry-run", "x.js"], { ...c.options, ...options } as never);
      await expect(run).rejects.toThrow(ArgumentError);
      await expect(runCpu(["--dry-run", "x.js"], options as never)).rejects.toThrow(message);
    }
  });

  it("core lists", () => {
    expect(parseCoreList("0-3,8,10-11, 9")).toEqual([0, 1, 2, 3, 8, 9, 10, 11]);
    expect(formatCoreList([0, 1, 2, 3, 8, 9, 10, 11])).toBe("0-3,8-11");
    expect(formatCoreList([5])).toBe("5");
  });

  it("runs 2 instances of a tiny script, each with its thread count (and backends.xeon.runCpu is it)", async () => {
    expect(backends.xeon.runCpu).toBe(runCpu);
    const dir = mkdtempSync(join(tmpdir(), "run-cpu-"));
    try {
      const script = join(dir, "tiny.mjs");
      writeFileSync(
        script,
        `import { writeFileSync } from "node:fs";
const env = globalThis.Deno ? Deno.env.toObject() : process.env;
const args = globalThis.Deno ? Deno.args : process.argv.slice(2);
writeFileSync(${JSON.stringify(dir)} + "/out-" + env.BACKPLANE_INSTANCE_INDEX + ".json", JSON.stringify({
  omp: env.OMP_NUM_THREADS, index: env.BACKPLANE_INSTANCE_INDEX, n: env.BACKPLANE_NINSTANCES, cores: env.BACKPLANE_CORE_LIST, args,
}));
console.log("hello from " + env.BACKPLANE_INSTANCE_INDEX);
`,
      );
      const c = capture();
      const code = await runCpu(
        ["--ninstances", "2", "--ncores-per-instance", "1", script, "a", "b c"],
        { ...c.options, output: "capture" },
      );
      expect(code, c.out.join("\n")).toBe(0);
      expect(c.out[0]).toMatch(/^run-cpu: 2 instances x 1 core/);
      expect(c.out).toContain("[0] hello from 0");
      expect(c.out).toContain("[1] hello from 1");
      const files = readdirSync(dir)
        .filter((f) => f.startsWith("out-"))
        .sort();
      expect(files).toEqual(["out-0.json", "out-1.json"]);
      const got = files.map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")));
      expect(got.map((r) => r.omp)).toEqual(["1", "1"]);
      expect(got.map((r) => r.n)).toEqual(["2", "2"]);
      expect(got[0].args).toEqual(["a", "b c"]);
      expect(got[0].cores).not.toBe(got[1].cores);

      // A failing instance's exit code is the result.
      const bad = join(dir, "bad.mjs");
      writeFileSync(
        bad,
        `if ((globalThis.Deno ? Deno.env.get("BACKPLANE_INSTANCE_INDEX") : process.env.BACKPLANE_INSTANCE_INDEX) === "1") { (globalThis.Deno ?? process).exit(5); }`,
      );
      const c2 = capture();
      expect(
        await runCpu(["--ninstances", "2", "--ncores-per-instance", "1", bad], {
          ...c2.options,
          output: "capture",
        }),
      ).toBe(5);
      expect(c2.out.join("\n")).toMatch(/instance 1 exited with code 5/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a SIGTERM to run-cpu goes on to its instances (none is left running) and is removed after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "run-cpu-sig-"));
    const proc = process as NodeJS.Process;
    const before = proc.listenerCount("SIGTERM");
    try {
      const script = join(dir, "wait.mjs");
      // Ready, then 30 s of waiting: only a forwarded signal ends it early.
      writeFileSync(
        script,
        `console.log("ready"); setTimeout(() => console.log("finished"), 30000);`,
      );
      const out: string[] = [];
      let sent = false;
      const log = (l: string) => {
        out.push(l);
        if (!sent && out.filter((x) => / ready$/.test(x)).length === 2) {
          sent = true;
          proc.emit("SIGTERM", "SIGTERM");
        }
      };
      const t0 = Date.now();
      const code = await runCpu(
        ["--ninstances", "2", "--ncores-per-instance", "1", "--disable-taskset", script],
        { log, error: log, output: "capture", cores: [0, 1] },
      );
      expect(sent, out.join("\n")).toBe(true);
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(out.join("\n")).not.toMatch(/finished/);
      // Killed by SIGTERM: 128 + 15, as a shell reports it.
      expect(code, out.join("\n")).toBe(143);
      expect(proc.listenerCount("SIGTERM")).toBe(before);

      // An instance that ignores SIGINT is killed by the second one (a second Ctrl-C).
      const stubborn = join(dir, "stubborn.mjs");
      writeFileSync(
        stubborn,
        `process.on("SIGINT", () => console.log("ignored")); console.log("ready"); setTimeout(() => {}, 30000);`,
      );
      const out2: string[] = [];
      const log2 = (l: string) => {
        out2.push(l);
        if (/ ready$/.test(l)) proc.emit("SIGINT", "SIGINT");
        if (/ ignored$/.test(l)) proc.emit("SIGINT", "SIGINT");
      };
      const code2 = await runCpu(["--disable-taskset", stubborn], {
        log: log2,
        error: log2,
        output: "capture",
        cores: [0],
      });
      expect(out2.join("\n")).toMatch(/\[0\] ignored/);
      expect(code2, out2.join("\n")).toBe(137); // 128 + SIGKILL's 9
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
