/**
 * End-to-end: builds the playground (vite build), serves dist/ with `vite preview` on
 * 127.0.0.1, and drives Debian's Chromium (playwright-core) through every panel. Runs a
 * matmul on WASM and on WebGPU (or checks the UI gives the reason WebGPU is missing),
 * checks results against the reference, that the console stayed clean, and saves
 * screenshots to apps/playground/artifacts/.
 *
 *   cd /work/main && npx vitest run --config apps/playground/vitest.config.ts
 *
 * Skipped (with the reason printed) where /usr/bin/chromium is not installed.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { build, type PreviewServer, preview } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const APP = fileURLToPath(new URL("..", import.meta.url));
const ARTIFACTS = join(APP, "artifacts");
const DOC_SHOT = fileURLToPath(new URL("../../../docs/playground.png", import.meta.url));
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium)
  console.warn(
    `[playground] skipping browser tests: ${CHROMIUM} not found (apt-get install -y chromium)`,
  );

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

describe.skipIf(!haveChromium)("playground in Chromium", () => {
  let server: PreviewServer;
  let browser: Browser;
  let page: Page;
  let url: string;
  let ctx: { close(): Promise<void> } | undefined;
  let userDataDir: string;
  const consoleErrors: string[] = [];
  const shot = async (name: string) => {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  };
  const tab = async (id: string) => {
    await page.click(`#tab-${id}`);
    await page.waitForSelector(`#panel-${id}[data-ready="1"]`, { timeout: 20_000 });
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const configFile = join(APP, "vite.config.ts");
    await build({ root: APP, configFile, logLevel: "warn" });
    const port = await freePort();
    server = await preview({
      root: APP,
      configFile,
      preview: { host: "127.0.0.1", port, strictPort: true },
      logLevel: "warn",
    });
    url = `http://127.0.0.1:${port}/`;
    userDataDir = mkdtempSync(join(tmpdir(), "playground-chromium-"));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: [
        "--headless=new",
        "--no-sandbox",
        "--enable-unsafe-webgpu",
        "--enable-features=Vulkan",
        "--use-angle=swiftshader",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    browser = context.browser()!;
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
    await page.goto(url);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
    // keep `browser` referenced for afterAll; persistent contexts close through the context
    void browser;
    ctx = context;
  });

  afterAll(async () => {
    await ctx?.close();
    await server?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it("serves the page cross-origin isolated (threads) and lists every backend namespace", async () => {
    const res = await fetch(url);
    expect(res.headers.get("cross-origin-opener-policy")).toBe("same-origin");
    expect(res.headers.get("cross-origin-embedder-policy")).toBe("require-corp");
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    const names = await page.$$eval("#namespaces tbody tr td:first-child", (tds) =>
      tds.map((t) => t.textContent),
    );
    expect(names).toEqual(
      expect.arrayContaining([
        "cpu",
        "cuda",
        "cudnn",
        "mkl",
        "mkldnn",
        "openmp",
        "optEinsum",
        "nnpack",
      ]),
    );
    // Capabilities read as "key: value" lines, not raw JSON; a software WebGPU adapter (the
    // SwiftShader of headless Chromium) is said so in words.
    const openmp = await page.$$eval("#namespaces tbody tr", (trs) =>
      trs
        .filter((tr) => tr.querySelector("td")?.textContent === "openmp")
        .map((tr) => [...tr.querySelectorAll(".cap code")].map((c) => c.textContent ?? "")),
    );
    expect(openmp[0]!.some((l) => /^threads: \d+$/.test(l))).toBe(true);
    expect(openmp[0]!.every((l) => !l.startsWith("{"))).toBe(true);
    const webgpuRow = await page.$$eval("#namespaces tbody tr", (trs) =>
      trs
        .filter((tr) => tr.querySelector("td")?.textContent === "webgpu")
        .map((tr) => ({
          available: tr.querySelectorAll("td")[2]?.textContent,
          software: tr.querySelector("[data-software-adapter]")?.textContent ?? "",
          cap: tr.querySelector(".cap")?.textContent ?? "",
        })),
    );
    if (webgpuRow[0]?.available === "yes" && /swiftshader|llvmpipe/i.test(webgpuRow[0].cap))
      expect(webgpuRow[0].software).toMatch(/software adapter .*not a GPU's/);
    const cpuMkl = await page.textContent("#packages");
    expect(cpuMkl).toContain("@backplane/backend-cpu-mkl");
    await shot("1-backends");
  });

  it("flags: typed controls, a setting that sticks, and the scoped override", async () => {
    await tab("flags");
    expect(await page.getAttribute('[data-flag="cudnn.benchmark"]', "type")).toBe("checkbox");
    const tags = await page.$$eval("[data-flag]", (els) =>
      els.map((e) => `${e.tagName}:${(e as HTMLInputElement).type}`),
    );
    expect(tags).toContain("SELECT:select-one");
    expect(tags).toContain("INPUT:number");
    await page.selectOption("#scope-key", "cudnn.benchmark");
    await page.click("#scope-run");
    await page.waitForFunction(() =>
      document.querySelector("#scope-out")?.textContent?.includes("after sync scope"),
    );
    const text = await page.textContent("#scope-out");
    expect(text).toMatch(/before:\s+cudnn\.benchmark = false/);
    expect(text).toMatch(/inside scope:\s+cudnn\.benchmark = true/);
    expect(text).toMatch(/after scope:\s+cudnn\.benchmark = false/);
    await shot("2-flags");
  });

  it("op runner: matmul on wasm-gemm matches the float64 reference", async () => {
    await tab("ops");
    await page.selectOption("#op", "matmul");
    await page.selectOption("#case", "64x64 @ 64x64");
    await page.selectOption("#dtype", "float32");
    await page.selectOption("#kernel", "cpu-wasm|wasm-gemm|cpu");
    await page.click("#op-run");
    await page.waitForSelector("#op-result", { timeout: 30_000 });
    expect(await page.getAttribute("#op-result", "data-status")).toBe("pass");
    expect(await page.textContent("#op-kernel")).toBe("wasm-gemm");
    expect(Number(await page.getAttribute("#op-result", "data-error"))).toBeLessThan(1e-4);
    expect(await page.textContent("#op-out .explain")).toContain("wasm-gemm");
    // explain() is shown once (its table), not again as text.
    expect(await page.$$("#op-out pre")).toHaveLength(0);
    await shot("3-ops-wasm");
  });

  it("op runner: matmul on WebGPU, or the reason WebGPU is missing", async () => {
    const webgpu = await page.evaluate(async () => {
      const gpu = navigator.gpu;
      if (!gpu) return "navigator.gpu is undefined";
      const a = await gpu.requestAdapter();
      return a ? "adapter" : "requestAdapter() returned null";
    });
    console.log(`[playground] WebGPU in headless Chromium: ${webgpu}`);
    const option = await page.$('#kernel option[value$="|webgpu"]');
    expect(option, "backend-webgpu registered its matmul kernel").not.toBeNull();
    await page.selectOption("#kernel", (await option!.getAttribute("value"))!);
    await page.click("#op-run");
    await page.waitForFunction(() => {
      const r = document.querySelector("#op-result");
      return r && !r.textContent?.includes("running");
    });
    const status = await page.getAttribute("#op-result", "data-status");
    if (webgpu === "adapter") {
      expect(status).toBe("pass");
      expect(Number(await page.getAttribute("#op-result", "data-error"))).toBeLessThan(1e-4);
    } else {
      // No adapter: the UI must say why the WebGPU kernel cannot run.
      expect(status).toBe("refused");
      expect((await page.textContent("#op-result"))!.length).toBeGreaterThan(20);
    }
    await shot("4-ops-webgpu");
  });

  const benchRows = () =>
    page.$$eval("#bench-table tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );

  it("benchmark: Stop ends a run early and shows what was timed", async () => {
    await tab("bench");
    await page.selectOption("#bench-max", "512");
    await page.click("#bench-run");
    await page.click("#bench-stop");
    await page.waitForSelector('#bench-out[data-done="1"]', { timeout: 60_000 });
    expect(await page.textContent("#bench-label")).toMatch(/^stopped after \d+ run/);
    const total = Number(await page.getAttribute("#bench-progress", "max"));
    expect((await benchRows()).length).toBeLessThan(total);
    expect(await page.isDisabled("#bench-stop")).toBe(true);
    expect(await page.isDisabled("#bench-run")).toBe(false);
  });

  it("benchmark: GFLOP/s per size and kernel, plotted", async () => {
    await tab("bench");
    // The smallest size only (the whole sweep when the README picture is refreshed).
    const full = process.env.UPDATE_DOC_SHOT === "1";
    await page.selectOption("#bench-max", full ? "512" : "64");
    await page.click("#bench-run");
    await page.waitForSelector('#bench-out[data-done="1"]', { timeout: 90_000 });
    const rows = await benchRows();
    const wasm = rows.filter((r) => r[0] === "wasm-gemm");
    expect(wasm.map((r) => Number(r[1]))).toEqual(full ? [64, 128, 192, 256, 384, 512] : [64]);
    for (const r of wasm) expect(Number(r[3])).toBeGreaterThan(0);
    expect(await page.$$eval("#bench-plot polyline", (p) => p.length)).toBeGreaterThanOrEqual(2);
    expect(await page.getAttribute("#bench-progress", "value")).toBe(
      await page.getAttribute("#bench-progress", "max"),
    );
    await shot("5-bench");
  });

  it("einsum: the contraction tree redraws when the strategy changes", async () => {
    await tab("einsum");
    await page.waitForSelector("#einsum-tree, #einsum-reason", { timeout: 20_000 });
    if (await page.$("#einsum-reason"))
      throw new Error(`opt-einsum unavailable: ${await page.textContent("#einsum-reason")}`);
    const greedy = await page.textContent("#einsum-summary");
    await page.selectOption("#einsum-strategy", "optimal");
    await page.waitForFunction(
      (g) => document.querySelector("#einsum-summary")?.textContent !== g,
      greedy,
    );
    const optimal = await page.textContent("#einsum-summary");
    expect(optimal).toMatch(/optimal/);
    expect(await page.$$eval("#einsum-tree g.step", (g) => g.length)).toBe(3);
    expect(await page.$$eval("#einsum-tree g.leaf", (g) => g.length)).toBe(4);
    await shot("6-einsum");
    // Bad input is a typed message in the panel (a plain Error before), a bad equation too.
    const shapes = await page.inputValue("#einsum-shapes");
    await page.fill("#einsum-shapes", "3x-4, 4x5");
    await page.click("#einsum-run");
    expect(await page.textContent("#einsum-out .error")).toMatch(/^E_ARGUMENT: bad dimension "-4"/);
    await page.fill("#einsum-shapes", shapes);
    await page.fill("#einsum-eq", "ab,bc,cd,de->az");
    await page.click("#einsum-run");
    expect(await page.textContent("#einsum-out .error")).toMatch(
      /^E_ARGUMENT: einsum: output index z/,
    );
    await page.fill("#einsum-eq", "ab,bc,cd,de->ae");
  });

  it("attention: which SDPA backends accept or refuse, and why", async () => {
    await tab("attention");
    await page.waitForSelector("#sdpa-families", { timeout: 20_000 });
    const fam = await page.textContent("#sdpa-families");
    expect(fam).toContain("MATH");
    expect(fam).toContain("accepts");
    expect(fam).toMatch(/refuses/);
    expect(await page.getAttribute("#sdpa-result", "class")).toContain("pass");
    // A bool mask: every family is judged again.
    await page.selectOption("#sdpa-mask", "bool");
    await page.waitForFunction(
      () => document.querySelector("#sdpa-result")?.textContent?.includes("bool"),
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.getAttribute("#sdpa-result", "class")).toContain("pass");
    // A mask together with isCausal is a typed error (as in torch), shown in the panel.
    await page.check("#sdpa-causal");
    await page.waitForSelector("#sdpa-out .error", { timeout: 20_000 });
    console.log(`[playground] mask + causal: ${await page.textContent("#sdpa-out .error")}`);
    await page.selectOption("#sdpa-mask", "none");
    await page.waitForFunction(
      () => document.querySelector("#sdpa-result")?.textContent?.includes("causal"),
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.getAttribute("#sdpa-result", "class")).toContain("pass");
    await shot("7-attention");
    await page.click("#tab-bench"); // the plot from the benchmark run above, for the README
    // The README's picture is refreshed on request only (UPDATE_DOC_SHOT=1), so a test
    // run modifies no tracked file; the run's own shot goes to the artifacts.
    const shotPath = join(ARTIFACTS, "readme-bench.png");
    await page.screenshot({ path: shotPath, fullPage: false });
    if (process.env.UPDATE_DOC_SHOT === "1") copyFileSync(shotPath, DOC_SHOT);
  });

  it("attention: bad sizes are a typed message, and too much work is refused at once", async () => {
    await tab("attention");
    await page.waitForSelector("#sdpa-families", { timeout: 20_000 });
    const setSize = async (id: string, v: string) => {
      await page.fill(id, v);
      await page.dispatchEvent(id, "change");
    };
    const errorText = async () => {
      await page.waitForSelector("#sdpa-out .error", { timeout: 5_000 });
      return page.textContent("#sdpa-out .error");
    };
    // A negative size was a RangeError from a typed array; an empty one ran as 0.
    await setSize("#sdpa-L", "-1");
    expect(await errorText()).toMatch(/^E_ARGUMENT: L must be a whole number >= 0, got "-1"/);
    await setSize("#sdpa-L", "");
    expect(await errorText()).toMatch(/^E_ARGUMENT: L must be a whole number >= 0/);
    await setSize("#sdpa-L", "64");
    await setSize("#sdpa-dropout", "");
    expect(await errorText()).toMatch(/^E_ARGUMENT: dropout must be a number/);
    await setSize("#sdpa-dropout", "0");
    // S = 100000 froze the page (the float64 reference) for minutes: now refused in words.
    const t0 = Date.now();
    await setSize("#sdpa-S", "100000");
    expect(await errorText()).toMatch(/^E_ARGUMENT: B·H·L·S·E = 1638400000 is more than/);
    expect(Date.now() - t0).toBeLessThan(5_000);
    await setSize("#sdpa-S", "64");
    await page.waitForSelector("#sdpa-result", { timeout: 20_000 });
    expect(await page.getAttribute("#sdpa-result", "class")).toContain("pass");
  });

  it("flags: a refused value is said, and the control goes back to the flag's value", async () => {
    await tab("flags");
    const sel = '[data-flag="cudnn.benchmarkLimit"]';
    const before = await page.inputValue(sel);
    for (const bad of ["-5", ""]) {
      await page.fill(sel, bad);
      await page.dispatchEvent(sel, "change");
      expect(await page.textContent("#flag-error")).toMatch(/cudnn\.benchmarkLimit must be/);
      // It showed the refused -5 (and an empty field set the flag to 0) before.
      expect(await page.inputValue(sel)).toBe(before);
    }
  });

  it("without WebGPU: the page loads, says why, and the WebGPU kernel is refused in words", async () => {
    const bare = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless=new", "--no-sandbox", "--disable-webgpu", "--no-first-run"],
    });
    try {
      const p = await bare.newPage();
      const errors: string[] = [];
      p.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      p.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
      await p.goto(url);
      await p.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
      const row = await p.$$eval("#namespaces tbody tr", (trs) =>
        trs
          .filter((tr) => tr.querySelector("td")?.textContent === "webgpu")
          .map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      );
      expect(row[0]?.[2]).toBe("no");
      expect(row[0]?.[4]).toMatch(/navigator\.gpu|requestAdapter|adapter/);
      await p.click("#tab-ops");
      await p.waitForSelector('#panel-ops[data-ready="1"]');
      await p.selectOption("#op", "matmul");
      const option = await p.$('#kernel option[value$="|webgpu"]');
      await p.selectOption("#kernel", (await option!.getAttribute("value"))!);
      await p.click("#op-run");
      await p.waitForSelector("#op-result", { timeout: 30_000 });
      expect(await p.getAttribute("#op-result", "data-status")).toBe("refused");
      // It was an E_DEVICE error ("await backends.ready() first") instead of a result.
      expect(await p.textContent("#op-result .reason")).toMatch(/^webgpu is not available: /);
      await p.click("#tab-attention");
      await p.waitForSelector('#panel-attention[data-ready="1"]');
      await p.selectOption("#sdpa-device", "webgpu");
      await p.waitForSelector("#sdpa-device-refused", { timeout: 20_000 });
      expect(await p.textContent("#sdpa-device-refused")).toMatch(/^webgpu is not available: /);
      expect(errors).toEqual([]);
    } finally {
      await bare.close();
    }
  });

  it("left the console free of errors", () => {
    expect(consoleErrors).toEqual([]);
  });
});
