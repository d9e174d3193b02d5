#!/usr/bin/env node
/**
 * Runs a command N times in a row and counts how each run ended, for failures that come
 * one run in ten or fifty (a race at process exit, a test that depends on timing):
 *
 *   node scripts/stress.mjs 30 -- node scripts/runtime.mjs deno test -A --no-check --config deno.json packages
 *   node scripts/stress.mjs 10 --log /tmp/npm-test -- npm test
 *
 * Each run's output goes to <log>-<i>.txt (default: a temp dir); a failed run prints its
 * exit code or signal and the last lines. Exit status 1 when any run failed.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
const dash = args.indexOf("--");
const runs = Number(args[0]);
if (dash < 0 || !Number.isInteger(runs) || runs < 1 || dash === args.length - 1) {
  console.error("usage: node scripts/stress.mjs <runs> [--log PREFIX] -- <command...>");
  process.exit(2);
}
const logAt = args.indexOf("--log");
const prefix =
  logAt >= 0 && logAt < dash
    ? args[logAt + 1]
    : join(mkdtempSync(join(tmpdir(), "backplane-stress-")), "run");
const [cmd, ...cmdArgs] = args.slice(dash + 1);

const ended = new Map();
let failed = 0;
for (let i = 1; i <= runs; i++) {
  const t0 = Date.now();
  const r = spawnSync(cmd, cmdArgs, { encoding: "utf8", maxBuffer: 1 << 30 });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  writeFileSync(`${prefix}-${i}.txt`, out);
  const how = r.error
    ? `error ${r.error.message}`
    : r.signal
      ? `signal ${r.signal}`
      : `exit ${r.status}`;
  ended.set(how, (ended.get(how) ?? 0) + 1);
  const s = ((Date.now() - t0) / 1000).toFixed(0);
  if (how !== "exit 0") {
    failed++;
    const tail = out.trimEnd().split("\n").slice(-6).join("\n    ");
    console.log(`run ${i}/${runs}: ${how} after ${s} s (${prefix}-${i}.txt)\n    ${tail}`);
  } else {
    console.log(`run ${i}/${runs}: ok (${s} s)`);
  }
}
const summary = [...ended].map(([how, n]) => `${how}: ${n}`).join(", ");
console.log(`\n${runs} runs, ${failed} failed (${summary}); logs at ${prefix}-*.txt`);
process.exit(failed ? 1 : 0);
