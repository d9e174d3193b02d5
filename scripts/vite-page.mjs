// The browser half of the consumer test (consumer-test.mjs): Vite builds a page from the
// consumer project, which is served twice, with and without COOP/COEP, and opened in
// headless Chromium. With the headers the CPU memory is shared and openmp runs workers;
// without, the page still computes on one thread and openmp's reason names the headers.
// A second build serves the .wasm files from a custom path (setWasmLocation).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join } from "node:path";
import { chromium } from "playwright-core";
import { build } from "vite";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

function serve(root, headers, seen) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    seen.push(path);
    const file = join(root, path === "/" ? "index.html" : path);
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      ...headers,
    });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** The page: the consumer's check.mjs, reporting to the DOM. */
function pageScript(custom) {
  const setLocation = custom
    ? `import { setWasmLocation } from "@backplane/core";
setWasmLocation((file) => new URL("/custom-wasm/" + file, location.href));
`
    : "";
  return `${setLocation}import { check } from "../check.mjs";
check().then(
  ({ result, openmp }) => Object.assign(document.body.dataset, { result, openmp }),
  (e) => { document.body.dataset.result = "error: " + e.message; },
);
`;
}

async function buildPage(dir, custom) {
  const root = join(dir, custom ? "page-custom" : "page");
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, "index.html"),
    '<!doctype html><script type="module" src="./main.js"></script>',
  );
  writeFileSync(join(root, "main.js"), pageScript(custom));
  await build({ root, logLevel: "warn", build: { target: "es2022", outDir: "dist" } });
  const dist = join(root, "dist");
  if (custom) {
    // The app's own copy of the .wasm files, at the path it told the core.
    mkdirSync(join(dist, "custom-wasm"));
    for (const p of ["backend-cpu-mkl", "backend-openmp", "backend-nnpack"]) {
      const from = join(dir, "node_modules", "@backplane", p, "wasm");
      for (const f of readdirSync(from)) cpSync(join(from, f), join(dist, "custom-wasm", f));
    }
  }
  return dist;
}

async function open(url) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(() => document.body.dataset.result, undefined, { timeout: 60_000 });
    return {
      result: await page.evaluate(() => document.body.dataset.result),
      openmp: await page.evaluate(() => document.body.dataset.openmp),
    };
  } finally {
    await browser.close();
  }
}

export async function checkVitePage(dir) {
  if (!existsSync(CHROMIUM)) {
    console.log(`vite page: skipped, ${CHROMIUM} not found (apt-get install -y chromium)`);
    return process.env.CI ? 1 : 0;
  }
  let failed = 0;
  const isolation = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
  };
  const dist = await buildPage(dir, false);
  const distCustom = await buildPage(dir, true);
  for (const [name, root, headers, expectOpenmp] of [
    ["vite page with COOP/COEP", dist, isolation, /^available$/],
    [
      "vite page without the headers",
      dist,
      {},
      /Cross-Origin-Opener-Policy.*Cross-Origin-Embedder-Policy/,
    ],
    ["vite page, .wasm from a custom path", distCustom, isolation, /^available$/],
  ]) {
    const seen = [];
    const server = await serve(root, headers, seen);
    try {
      const { result, openmp } = await open(`http://127.0.0.1:${server.address().port}/`);
      const wasm = seen.filter((p) => p.endsWith(".wasm"));
      const customOk =
        root !== distCustom ||
        (wasm.length > 0 && wasm.every((p) => p.startsWith("/custom-wasm/")));
      const ok =
        /^ok browser: matmul=wasm-gemm/.test(result ?? "") &&
        expectOpenmp.test(openmp ?? "") &&
        customOk;
      console.log(
        `${ok ? "ok" : "FAIL"} ${name}: ${result}; openmp: ${openmp}; wasm fetched: ${wasm.join(", ")}`,
      );
      if (!ok) failed++;
    } finally {
      server.close();
    }
  }
  return failed;
}
