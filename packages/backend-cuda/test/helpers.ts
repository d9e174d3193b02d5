/** Test helpers: run with a RecordingLayer installed as the CUDA runtime, then restore. */

import { ready } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";
import {
  CUDA_BACKEND,
  installLayer,
  type RecordedLaunch,
  RecordingLayer,
  type RecordingOptions,
} from "../src/internals.ts";

export const SM80 = {
  name: "Fake A100",
  major: 8,
  minor: 0,
  totalMemory: 40 * 2 ** 30,
  sharedMemoryPerBlockOptin: 163 * 1024,
};
export const SM75 = {
  name: "Fake T4",
  major: 7,
  minor: 5,
  totalMemory: 16 * 2 ** 30,
  sharedMemoryPerBlockOptin: 64 * 1024,
};

/** Installs a fresh RecordingLayer for the duration of `fn` (async-safe). */
export async function withRecording<R>(
  opts: RecordingOptions,
  fn: (layer: RecordingLayer) => R | Promise<R>,
): Promise<R> {
  const layer = new RecordingLayer(opts);
  const restore = installLayer(layer);
  try {
    await ready(CUDA_BACKEND);
    const r = await fn(layer);
    expectLaunchesMatchPtx(layer.launches);
    return r;
  } finally {
    restore();
  }
}

/** Sets an environment variable for the duration of `fn`. */
export async function withEnv<R>(
  name: string,
  value: string | undefined,
  fn: () => R | Promise<R>,
): Promise<R> {
  const env = (globalThis as { process: { env: Record<string, string | undefined> } }).process.env;
  const saved = env[name];
  if (value === undefined) delete env[name];
  else env[name] = value;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete env[name];
    else env[name] = saved;
  }
}

/** Captures console.warn lines during `fn`. */
export function captureWarnings(fn: () => void): string[] {
  const lines: string[] = [];
  const orig = console.warn;
  console.warn = (...a: unknown[]) => void lines.push(a.map(String).join(" "));
  try {
    fn();
  } finally {
    console.warn = orig;
  }
  return lines;
}

/** Parameter sizes of every PTX entry point of the package (from ptx/*.ptx). */
function ptxSignatures(): Map<string, number[]> {
  const fs = builtinModule<typeof import("node:fs")>("node:fs") ?? null;
  const read = (f: string): string =>
    fs
      ? fs.readFileSync(new URL(`../ptx/${f}`, import.meta.url), "utf8")
      : (host.Deno?.readTextFileSync(new URL(`../ptx/${f}`, import.meta.url)) ?? "");
  const out = new Map<string, number[]>();
  const modules = [
    "copy",
    "softmax",
    "attention_efficient",
    "attention_flash",
    "attention_flash_tc",
  ];
  for (const f of modules.map((m) => `${m}.ptx`)) {
    for (const m of read(f).matchAll(/\.visible \.entry (\w+)\(([\s\S]*?)\)/g)) {
      out.set(
        m[1]!,
        [...m[2]!.matchAll(/\.param \.[a-z](\d+) /g)].map((p) => Number(p[1]) / 8),
      );
    }
  }
  return out;
}

/**
 * Checks that every recorded launch packed exactly the parameters its PTX entry declares:
 * the same count, and each at the offset the PTX sizes give (a 4-byte int where the kernel
 * takes 8 bytes, or the reverse, shifts the next offset).
 */
export function expectLaunchesMatchPtx(launches: readonly RecordedLaunch[]): void {
  const sigs = ptxSignatures();
  for (const l of launches) {
    const sizes = sigs.get(l.kernel);
    if (!sizes) throw new Error(`${l.kernel} is not a PTX entry point`);
    if (sizes.length !== l.offsets.length)
      throw new Error(
        `${l.kernel}: ${l.offsets.length} arguments packed, the PTX takes ${sizes.length}`,
      );
    let off = l.offsets[0]!;
    sizes.forEach((size, i) => {
      off = Math.ceil(off / size) * size;
      if (l.offsets[i] !== off)
        throw new Error(
          `${l.kernel}: argument ${i} packed at ${l.offsets[i]}, the PTX sizes put it at ${off}`,
        );
      off += size;
    });
  }
}
