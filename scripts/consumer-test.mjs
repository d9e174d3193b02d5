#!/usr/bin/env node
// The packages as a user gets them: `npm pack` core and three backends, install the
// tarballs into a fresh project outside the workspace, and run one script that imports
// them and checks matmul, conv2d and SDPA against known values, on Node, Bun and Deno;
// and one with two more copies of the core installed beside it (one core per process).
// Then the same checks in a page built by Vite from that project, served with and without
// the COOP/COEP headers and opened in headless Chromium (vite-page.mjs). Needs the
// packages built. Exit 1 when a runtime fails.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = join(new URL(".", import.meta.url).pathname, "..");
const PACKAGES = ["core", "testkit", "cli", "backend-cpu-mkl", "backend-openmp", "backend-nnpack"];
const dir = mkdtempSync(join(tmpdir(), "backplane-consumer-"));
const tarballs = join(dir, "tarballs");
mkdirSync(tarballs);

// One check module, shared by the runtimes (run.mjs) and the page (vite-page.mjs): it
// loads the backends itself, so a page can set the .wasm location before they load.
const CHECK = `
export async function check() {
  const { backends, conv2d, matmul, ready, runtime, scaledDotProductAttention, tensor } =
    await import("@backplane/core");
  await import("@backplane/backend-cpu-mkl");
  await import("@backplane/backend-openmp");
  await import("@backplane/backend-nnpack");
  await ready();
  const flat = (t) => t.toArray().flat(9);
  const close = (got, want, what) => {
    if (got.length !== want.length || got.some((g, i) => Math.abs(g - want[i]) > 1e-5))
      throw new Error(what + ": got " + JSON.stringify(got) + ", want " + JSON.stringify(want));
  };
  const { calls } = backends.record(() => {
    close(flat(matmul(tensor([[1, 2], [3, 4]]), tensor([[5, 6], [7, 8]]))), [19, 22, 43, 50], "matmul");
    const x = tensor(Array.from({ length: 16 }, (_, i) => i), { shape: [1, 1, 4, 4] });
    const w = tensor([1, 0, 0, 1], { shape: [1, 1, 2, 2] }); // x[i][j] + x[i+1][j+1]
    close(flat(conv2d(x, w)), [5, 7, 9, 13, 15, 17, 21, 23, 25], "conv2d");
    // Equal keys: every weight is 1/3, so each output row is the mean of v's rows.
    const q = tensor([[[0.5, -1]]]);
    const k = tensor([[[1, 2], [1, 2], [1, 2]]]);
    const v = tensor([[[1, 10], [2, 20], [6, 30]]]);
    close(flat(scaledDotProductAttention(q, k, v)), [3, 20], "sdpa");
  });
  return {
    result: "ok " + runtime().name + ": " + calls.map((c) => c.op + "=" + c.kernel).join(", ") +
      ", mkl.status: " + (backends.mkl.status().reason ?? "available"),
    openmp: backends.openmp.isAvailable() ? "available" : backends.openmp.status().reason,
  };
}
`;
// Two more copies of the core beside the one the backends use, as npm installs them when
// two packages pin different versions: the same version (core-same) joins the first copy
// (one Tensor class, one registry), a later breaking version (core-next) refuses to load.
const TWO_CORES = `
const core = await import("@backplane/core");
const author = await import("@backplane/core/backend");
await import("@backplane/backend-cpu-mkl");
const same = await import("core-same");
const sameAuthor = await import("core-same/backend");
const t = same.tensor([[1, 2], [3, 4]]);
const joined = same.Tensor === core.Tensor && sameAuthor.registerBackend === author.registerBackend &&
  t instanceof core.Tensor && core.matmul(t, t).toArray().flat().join() === "7,10,15,22" &&
  same.backends.mkl.isBuilt() === core.backends.mkl.isBuilt();
if (!joined) throw new Error("core-same did not join the first copy");
let refused = "";
try {
  await import("core-next");
} catch (e) {
  refused = e.code === "E_CORE_CONFLICT" && /0.2.0/.test(e.message) && /npm dedupe/.test(e.message) ? "refused" : String(e);
}
if (refused !== "refused") throw new Error("core-next should refuse to load: " + refused);
console.log("ok " + core.runtime().name + ": a second copy of the same version joins, 0.2.0 refuses (E_CORE_CONFLICT)");
`;
// A third party's backend package, built only against the published entries: a naive
// float32 matmul. MISTAKES makes each author mistake in turn (a misspelt op or flag key,
// results of the wrong shape or dtype, an input handed back, nothing returned, a throw)
// and expects the typed error that names it; then the package done right passes
// runConformance under its backend name and under its package name.
const NAIVE_PACKAGE = {
  name: "backplane-backend-naive",
  version: "1.0.0",
  type: "module",
  main: "index.mjs",
  peerDependencies: { "@backplane/core": "*" },
};
const NAIVE = `
import { empty } from "@backplane/core";
import { defineBackend, ops, registerBackend } from "@backplane/core/backend";

export function naiveMatmul(p) {
  const out = empty(p.outShape, { dtype: "float32" });
  const [as0, as1] = p.aStrides.slice(-2);
  const [bs0, bs1] = p.bStrides.slice(-2);
  const A = p.a.hostData(), B = p.b.hostData(), C = out.hostData();
  for (let i = 0; i < p.m; i++)
    for (let j = 0; j < p.n; j++) {
      let s = 0;
      for (let k = 0; k < p.k; k++) s += A[i * as0 + k * as1] * B[k * bs0 + j * bs1];
      C[i * p.n + j] = s;
    }
  return out;
}

registerBackend(
  defineBackend({
    name: "naive",
    packageName: "backplane-backend-naive",
    devices: ["cpu"],
    version: () => "1.0.0",
    isAvailable: () => ({ available: true }),
    kernels: [
      ops.matmul.kernel({
        name: "naive-matmul",
        device: "cpu",
        dtypes: ["float32"],
        deterministic: true,
        priority: 10,
        supports: (p) => (p.batchShape.length === 0 && p.m > 0 && p.n > 0 ? true : "2-D, non-empty products only"),
        run: naiveMatmul,
      }),
    ],
  }),
);
`;
const MISTAKES = `
import { backends, matmul, randn, withKernelPriority, zeros } from "@backplane/core";
import { defineBackend, registerBackend } from "@backplane/core/backend";
import { runConformance } from "@backplane/testkit";
import { naiveMatmul } from "backplane-backend-naive";

const base = { devices: ["cpu"], isAvailable: () => ({ available: true }) };
const kernel = (extra) => ({ op: "matmul", name: "k", device: "cpu", dtypes: ["float32"], deterministic: true, priority: -100, run: naiveMatmul, ...extra });
const expectError = (what, f, name, pattern) => {
  try {
    f();
  } catch (e) {
    if (e.name === name && pattern.test(e.message)) return;
    throw new Error(what + ": got " + e.name + ": " + e.message);
  }
  throw new Error(what + ": no error");
};
expectError("a misspelt op", () => registerBackend(defineBackend({ ...base, name: "typo-op", kernels: [kernel({ op: "matmull" })] })), "RegistrationError", /no op "matmull"; did you mean matmul\\?/);
expectError("a misspelt flag key", () => registerBackend(defineBackend({ ...base, name: "typo-flag", flags: { fl3: { enabled: { kind: "bool", default: true } } }, kernels: [kernel({ flags: ["fl3.enabld"] })] })), "RegistrationError", /fl3\\.enabld.*did you mean fl3\\.enabled/);
const a = randn([4, 4]);
const broken = {
  wrongShape: [() => zeros([1, 1]), /shape \\[1,1\\]; the op promises \\[4,4\\]/],
  wrongDtype: [() => zeros([4, 4], { dtype: "float64" }), /dtype float64; the op promises float32/],
  theInput: [(p) => p.a, /returned one of its inputs as its result/],
  nothing: [() => undefined, /kernel nothing of backend broken returned undefined/],
};
registerBackend(defineBackend({ ...base, name: "broken", kernels: Object.entries(broken).map(([name, [run]]) => kernel({ name, run })) }));
backends.core.checkKernels = true;
for (const [name, [, pattern]] of Object.entries(broken))
  expectError("a kernel that " + name, () => withKernelPriority("matmul", [name], () => matmul(a, a)), "KernelContractError", pattern);
registerBackend(defineBackend({ ...base, name: "throwing", kernels: [kernel({ name: "boom", run: () => { throw new Error("boom in kernel"); } })] }));
expectError("a throw in run()", () => withKernelPriority("matmul", ["boom"], () => matmul(a, a)), "KernelError", /kernel boom of backend throwing failed: Error: boom in kernel/);
let unknown = "";
try {
  await runConformance("backend-nope");
} catch (e) {
  unknown = e.name + ": " + e.message;
}
if (!/^ArgumentError: .*naive \\(backplane-backend-naive\\)/.test(unknown)) throw new Error("runConformance of an unknown name: " + unknown);
for (const name of ["naive", "backplane-backend-naive"]) {
  const report = await runConformance(name, { ops: ["matmul"] });
  report.assertPassed();
  if (report.passed === 0) throw new Error("runConformance(" + name + ") ran nothing");
}
const { runtime } = await import("@backplane/core");
console.log("ok " + runtime().name + ": a third-party backend's mistakes get typed errors; done right it passes runConformance as naive and backplane-backend-naive");
`;
// The published .d.ts files as a Node project sees them: @types/node, no DOM lib,
// skipLibCheck off; and a backend's namespace typed by module augmentation, as the guide
// shows (docs/writing-a-backend.md).
const TYPES = `
import { backends, matmul, type Tensor, tensor } from "@backplane/core";
import { defineBackend, ops, registerBackend } from "@backplane/core/backend";
import "@backplane/backend-cpu-mkl";
import "@backplane/backend-nnpack";
import "@backplane/backend-openmp";
import { runConformance } from "@backplane/testkit";

declare module "@backplane/core" {
  interface Backends {
    typedCheck: { isAvailable(): boolean; enabled: boolean };
  }
}

const kernel = ops.matmul.kernel({
  name: "typed-check-matmul",
  device: "cpu",
  dtypes: ["float32"],
  deterministic: true,
  priority: -1,
  run: (p): Tensor => matmul(p.a, p.b),
});
registerBackend(defineBackend({ name: "typed-check", devices: ["cpu"], isAvailable: () => ({ available: true }), kernels: [kernel] }));
const on: boolean = backends.typedCheck.enabled;
const t: Tensor = tensor([[1]]);
void on;
void t;
void runConformance;
`;
const TSCONFIG = {
  compilerOptions: {
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    lib: ["es2022"],
    types: ["node"],
    strict: true,
    skipLibCheck: false,
    noEmit: true,
  },
  files: ["types.ts"],
};
const RUN = `import { check } from "./check.mjs";
const { result, openmp } = await check();
console.log(result + "; openmp: " + openmp);
`;

/**
 * The README as a user follows it: a new project with only the packages of its `npm i`
 * line (packed here), and its first example saved verbatim as an .mjs file, run on Node,
 * Bun and Deno. Returns the number of failures.
 */
function readmeAsWritten() {
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  const names = /^npm i ((?:@backplane\/[\w-]+ ?)+)/m.exec(readme)?.[1].trim().split(/\s+/);
  const example = /## Use\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!names || !example) {
    console.log("FAIL README: no `npm i @backplane/...` line or no first example under ## Use");
    return 1;
  }
  const project = mkdtempSync(join(tmpdir(), "backplane-readme-"));
  let failed = 0;
  try {
    const dependencies = {};
    for (const name of names) {
      const file = readdirSync(tarballs).find((f) =>
        new RegExp(`^backplane-${name.replace("@backplane/", "")}-\\d`).test(f),
      );
      if (!file) {
        console.log(`FAIL README: its install line names ${name}, which is not packed here`);
        return 1;
      }
      dependencies[name] = `file:${join(tarballs, file)}`;
    }
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "readme", private: true, type: "module", dependencies }),
    );
    writeFileSync(join(project, "first-example.mjs"), example);
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--silent"], {
      cwd: project,
      stdio: "inherit",
    });
    const bin = (tool) => join(repo, "node_modules", ".bin", tool);
    for (const [name, cmd, args] of [
      ["node", process.execPath, ["first-example.mjs"]],
      ["bun", bin("bun"), ["first-example.mjs"]],
      ["deno", bin("deno"), ["run", "-A", "first-example.mjs"]],
    ]) {
      const r = spawnSync(cmd, args, { cwd: project, encoding: "utf8" });
      if (r.status === 0 && /matmul: runs /.test(r.stdout) && /conv2d: runs /.test(r.stdout))
        console.log(`ok ${name}: the README's install line and first example, as written`);
      else {
        failed++;
        console.log(`FAIL README example on ${name} (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
      }
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
  return failed;
}

/** The core's tarball again as version 0.2.0 (package.json and the version in its bundle). */
function nextCoreTarball(tarball, where) {
  const unpacked = join(where, "core-next");
  mkdirSync(unpacked);
  execFileSync("tar", ["-xzf", tarball, "-C", unpacked]);
  const pkgDir = join(unpacked, "package");
  const pkgFile = join(pkgDir, "package.json");
  const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
  const bundled = readdirSync(join(pkgDir, "dist")).filter((f) => f.endsWith(".js"));
  let patched = 0;
  for (const f of bundled) {
    const path = join(pkgDir, "dist", f);
    const text = readFileSync(path, "utf8");
    const next = text.replace(`var version = "${pkg.version}"`, 'var version = "0.2.0"');
    if (next !== text) patched++;
    writeFileSync(path, next);
  }
  if (patched !== 1)
    throw new Error(`expected the core's version once in its bundle, found ${patched}`);
  writeFileSync(pkgFile, JSON.stringify({ ...pkg, version: "0.2.0" }, null, 2));
  execFileSync("npm", ["pack", "--silent", "--pack-destination", where], {
    cwd: pkgDir,
    stdio: ["ignore", "ignore", "inherit"],
  });
  return "backplane-core-0.2.0.tgz";
}

try {
  for (const p of PACKAGES)
    execFileSync("npm", ["pack", "--silent", "--pack-destination", tarballs], {
      cwd: join(repo, "packages", p),
      stdio: ["ignore", "ignore", "inherit"],
    });
  const deps = Object.fromEntries(
    readdirSync(tarballs).map((f) => [
      `@backplane/${f.replace(/^backplane-/, "").replace(/-\d+\.\d+\.\d+\.tgz$/, "")}`,
      `file:./tarballs/${f}`,
    ]),
  );
  const coreTarball = readdirSync(tarballs).find((f) => /^backplane-core-/.test(f));
  deps["core-same"] = `file:./tarballs/${coreTarball}`;
  deps["backplane-backend-naive"] = "file:./naive";
  deps["core-next"] = `file:./${nextCoreTarball(join(tarballs, coreTarball), dir)}`;
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      { name: "consumer", private: true, type: "module", dependencies: deps },
      null,
      2,
    ),
  );
  writeFileSync(join(dir, "check.mjs"), CHECK);
  writeFileSync(join(dir, "run.mjs"), RUN);
  writeFileSync(join(dir, "two-cores.mjs"), TWO_CORES);
  mkdirSync(join(dir, "naive"));
  writeFileSync(join(dir, "naive", "package.json"), JSON.stringify(NAIVE_PACKAGE, null, 2));
  writeFileSync(join(dir, "naive", "index.mjs"), NAIVE);
  writeFileSync(join(dir, "mistakes.mjs"), `import "backplane-backend-naive";\n${MISTAKES}`);
  writeFileSync(join(dir, "types.ts"), TYPES);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--silent"], {
    cwd: dir,
    stdio: "inherit",
  });
  const bin = (tool) => join(repo, "node_modules", ".bin", tool);
  let failed = 0;
  for (const [name, cmd, args] of [
    ["node", process.execPath, ["run.mjs"]],
    ["bun", bin("bun"), ["run.mjs"]],
    ["deno", bin("deno"), ["run", "-A", "run.mjs"]],
    ["node", process.execPath, ["two-cores.mjs"]],
    ["bun", bin("bun"), ["two-cores.mjs"]],
    ["deno", bin("deno"), ["run", "-A", "two-cores.mjs"]],
    ["node", process.execPath, ["mistakes.mjs"]],
    ["bun", bin("bun"), ["mistakes.mjs"]],
    ["deno", bin("deno"), ["run", "-A", "mistakes.mjs"]],
  ]) {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: "utf8" });
    const line = r.stdout.trim().split("\n").pop() ?? "";
    if (r.status === 0 && line.startsWith(`ok ${name}`)) console.log(line);
    else {
      failed++;
      console.log(`FAIL ${name} (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
    }
  }
  // The .d.ts files type-checked as a Node project without the DOM lib (the repository's
  // TypeScript and @types/node, found through typeRoots).
  const tsc = spawnSync(
    process.execPath,
    [
      join(repo, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      "tsconfig.json",
      "--typeRoots",
      join(repo, "node_modules", "@types"),
    ],
    { cwd: dir, encoding: "utf8" },
  );
  if (tsc.status === 0)
    console.log(
      "ok tsc: the .d.ts files type-check with @types/node, no DOM lib, skipLibCheck off",
    );
  else {
    failed++;
    console.log(`FAIL tsc (exit ${tsc.status}):\n${tsc.stdout}\n${tsc.stderr}`);
  }
  // The CLI as a user installs it: its bin runs from the consumer project.
  const cli = spawnSync(
    join(dir, "node_modules", ".bin", "backplane"),
    ["explain", "matmul", "--shapes", "4x3,3x2"],
    {
      cwd: dir,
      encoding: "utf8",
    },
  );
  if (cli.status === 0 && /matmul: runs /.test(cli.stdout))
    console.log(`ok backplane (installed bin): ${cli.stdout.split("\n")[0]}`);
  else {
    failed++;
    console.log(
      `FAIL backplane (installed bin), exit ${cli.status}:\n${cli.stdout}\n${cli.stderr}`,
    );
  }
  // The CLI alone (with the core, without the optional testkit): info reports, and says
  // how to add the op checks.
  // (a folder of its own: one inside the consumer would find its node_modules above)
  const bare = mkdtempSync(join(tmpdir(), "backplane-cli-alone-"));
  const only = (name) =>
    `file:${join(
      tarballs,
      readdirSync(tarballs).find((f) => f.startsWith(`backplane-${name}-`)),
    )}`;
  writeFileSync(
    join(bare, "package.json"),
    JSON.stringify({
      name: "cli-alone",
      private: true,
      type: "module",
      dependencies: { "@backplane/core": only("core"), "@backplane/cli": only("cli") },
    }),
  );
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--silent"], {
    cwd: bare,
    stdio: "inherit",
  });
  const info = spawnSync(join(bare, "node_modules", ".bin", "backplane"), ["info"], {
    cwd: bare,
    encoding: "utf8",
  });
  rmSync(bare, { recursive: true, force: true });
  if (
    info.status === 0 &&
    /Ops: not checked: the op checks need @backplane\/testkit/.test(info.stdout)
  )
    console.log(
      "ok backplane info without the testkit: namespaces reported, op checks named as missing",
    );
  else {
    failed++;
    console.log(
      `FAIL backplane info without the testkit, exit ${info.status}:\n${info.stdout}\n${info.stderr}`,
    );
  }
  failed += readmeAsWritten();
  const { checkVitePage } = await import("./vite-page.mjs");
  failed += await checkVitePage(dir);
  process.exitCode = failed ? 1 : 0;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
