/**
 * The calibration cache file ($BACKPLANE_CACHE_DIR/calibration-v1.json) as a user's disk may
 * hold it: empty, truncated, another version's format, edited by hand, or a directory. None
 * may fail ready(): the figures are measured again, a note says why, and the next write
 * replaces the file. Every test points BACKPLANE_CACHE_DIR at a fresh temporary directory.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backends, setLogHandler } from "@backplane/core";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { calibration, ensureCalibrated, forgetCalibration } from "../src/dispatch/calibrate.ts";
import { userCacheDir } from "../src/runtime/user-cache.ts";

const FILE = "calibration-v1.json";
const savedEnv = { dir: process.env.BACKPLANE_CACHE_DIR, xdg: process.env.XDG_CACHE_HOME };
let dir = "";
const notes: string[] = [];
let previousLog: ReturnType<typeof setLogHandler> | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "bp-cache-corrupt-"));
  process.env.BACKPLANE_CACHE_DIR = dir;
  forgetCalibration();
  notes.length = 0;
  previousLog = setLogHandler((_level, message) => void notes.push(message));
});
afterEach(() => {
  if (previousLog) setLogHandler(previousLog);
  rmSync(dir, { recursive: true, force: true });
});
afterAll(() => {
  for (const [name, v] of [
    ["BACKPLANE_CACHE_DIR", savedEnv.dir],
    ["XDG_CACHE_HOME", savedEnv.xdg],
  ] as const) {
    if (v === undefined) delete process.env[name];
    else process.env[name] = v;
  }
  forgetCalibration();
});

/** The file as this version writes it, for the machine the test runs on. */
function goodFile(): { entries: Record<string, Record<string, unknown>> } {
  ensureCalibrated();
  const file = JSON.parse(readFileSync(join(dir, FILE), "utf8"));
  forgetCalibration();
  return file;
}

/** ready() on the file as written; then the file must be one this version reads back. */
async function readyOn(text: string): Promise<void> {
  writeFileSync(join(dir, FILE), text);
  await backends.ready();
  expect(calibration()?.source).toBe("measured");
  const rewritten = JSON.parse(readFileSync(join(dir, FILE), "utf8"));
  const entries = Object.values(rewritten.entries) as { at: unknown; measurements: unknown }[];
  expect(entries.length).toBeGreaterThan(0);
  for (const e of entries) {
    expect(typeof e.at).toBe("string");
    expect(Array.isArray(e.measurements)).toBe(true);
  }
}

describe("a damaged calibration cache", () => {
  const damaged: [string, string][] = [
    ["empty", ""],
    ["truncated", '{"entries":{"0123abcd":{"machine":"x","measu'],
    ["not JSON", "\u0000\u0001garbage"],
    ["null", "null"],
    ["a list", "[]"],
    ["entries a list", '{"entries":[]}'],
    ["an entry without its date", '{"entries":{"0123abcd":{}}}'],
    ["an entry that is null", '{"entries":{"0123abcd":null}}'],
    ["an entry with a numeric date", '{"entries":{"0123abcd":{"at":5,"machine":"m"}}}'],
    ["another version's format", '{"version":2,"entries":{"0123abcd":{"figures":{"matmul":1}}}}'],
    ["a __proto__ key", '{"entries":{"__proto__":{"at":"2026-01-01"}}}'],
  ];
  for (const [what, text] of damaged) {
    it(`is measured again and rewritten: ${what}`, async () => {
      await readyOn(text);
      expect(notes.some((n) => /calibration cache/.test(n))).toBe(true);
    });
  }

  it("measures this machine again when its own entry was damaged, never using its figures", async () => {
    const file = goodFile();
    const key = Object.keys(file.entries)[0];
    const broken: Record<string, unknown>[] = [
      { measurements: [null] },
      { measurements: [{}] },
      { measurements: [{ op: "matmul", figures: 5 }] },
      { measurements: "x" },
      { pending: 5 },
      { pending: "abc" },
      { skipped: 5 },
      {
        measurements: [
          {
            op: "matmul",
            case: "x",
            dtype: "float32",
            deviceType: "cpu",
            work: "a",
            figures: [{ kernel: 1 }],
            runs: 1,
          },
        ],
      },
    ];
    for (const b of broken) {
      forgetCalibration();
      const f = structuredClone(file);
      Object.assign(f.entries[key], b);
      await readyOn(JSON.stringify(f));
      const rep = calibration();
      expect(Array.isArray(rep?.skipped) && Array.isArray(rep?.pending)).toBe(true);
    }
  });

  it("still reads a good file back from the cache", async () => {
    writeFileSync(join(dir, FILE), JSON.stringify(goodFile()));
    await backends.ready();
    expect(calibration()?.source).toBe("cache");
    expect(notes.filter((n) => /calibration cache/.test(n))).toEqual([]);
  });

  it("leaves no temporary file behind when the cache file cannot be replaced", async () => {
    mkdirSync(join(dir, FILE)); // a directory where the file should be
    await backends.ready();
    await backends.ready();
    forgetCalibration();
    await backends.ready();
    expect(calibration()?.source).toBe("measured");
    expect(readdirSync(dir)).toEqual([FILE]);
  });

  it("is not kept in a directory that is a file", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    process.env.BACKPLANE_CACHE_DIR = file;
    await backends.ready();
    expect(calibration()?.source).toBe("measured");
    expect(calibration()?.cacheFile).toBeUndefined();
    process.env.BACKPLANE_CACHE_DIR = dir;
  });
});

describe("the cache directory", () => {
  it("ignores a relative XDG_CACHE_HOME, as the XDG spec says (Linux)", () => {
    if (process.platform !== "linux") return; // macOS and Windows have their own folders
    delete process.env.BACKPLANE_CACHE_DIR;
    process.env.XDG_CACHE_HOME = "relative/cache";
    expect(userCacheDir()).not.toMatch(/^relative/);
    process.env.XDG_CACHE_HOME = dir;
    expect(userCacheDir()).toBe(`${dir}/backplane`);
    process.env.BACKPLANE_CACHE_DIR = dir;
    expect(userCacheDir()).toBe(dir);
  });
});
