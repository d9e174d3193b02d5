/**
 * npm run bench -- <suite> [--json]
 * Runs one suite from bench/suites and prints a table, or with --json one object:
 * { suite, runtime, machine, results: [{ case, impl, median_ms, gflops? }], ratios: [{ name, value }] }
 */
import { Harness, machine, runtimeName, table } from "./harness.ts";
import { SUITES } from "./suites/index.ts";

const args = (globalThis as any).Deno?.args ?? process.argv.slice(2);
const json = args.includes("--json");
const name = args.find((a: string) => !a.startsWith("--"));
const suite = name ? SUITES[name] : undefined;
if (!suite) {
  console.error(
    `usage: npm run bench -- <suite> [--json]\nsuites: ${Object.keys(SUITES).join(", ")}`,
  );
  process.exit(2);
}
const h = new Harness(json ? () => {} : (line) => console.error(`  ${line}`));
await suite.run(h, args);
if (json) {
  console.log(
    JSON.stringify(
      {
        suite: name,
        runtime: runtimeName(),
        machine: machine(),
        results: h.results.map(({ samples: _s, ...r }) => r),
        ratios: h.ratios,
        notes: h.notes,
      },
      null,
      2,
    ),
  );
} else {
  console.log(table(name!, h));
}
