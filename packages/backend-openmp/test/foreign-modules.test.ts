/**
 * Modules workers cannot run as they are: one with a memory of its own (a worker's instance
 * wrote into its private copy, so the items it took were missing from the result) and one
 * with imports besides env.memory and env.abort (no worker could instantiate it, so every
 * run on 2 threads was a WorkerError). Both now run on the calling thread, like without
 * the pool. The modules are assembled here, byte by byte (see fillModule).
 */
import { seededRandom } from "@backplane/core";
import { cpuMemory, parallelFor, registerWasmModule, wasmKernelImports } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { eventually, readyPool, withHelperWait } from "./helpers.ts";

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
};
const name = (s: string): number[] => [s.length, ...[...s].map((c) => c.charCodeAt(0))];
const section = (id: number, body: number[]): number[] => [id, ...leb(body.length), ...body];
const vec = (items: number[][]): number[] => [...leb(items.length), ...items.flat()];

type Memory = "own" | "shared-import" | { sharedImportMax: number };

/**
 * `fill(ptr, i0, count)`: for i in [i0, i0 + count), the i32 at ptr + 4 i becomes
 * `a * i + b`; `a` and `b` are constants, or `b` comes from the import host.b() (`hostB`).
 */
function fillModule(memory: Memory, a: number, b: number, hostB = false): WebAssembly.Module {
  const I32 = 0x7f;
  const types = [
    [0x60, 3, I32, I32, I32, 0],
    [0x60, 0, 1, I32],
  ];
  const imports: number[][] = [];
  if (hostB) imports.push([...name("host"), ...name("b"), 0x00, 1]);
  if (memory !== "own") {
    const max = memory === "shared-import" ? 65536 : memory.sharedImportMax;
    imports.push([...name("env"), ...name("memory"), 0x02, 0x03, 1, ...leb(max)]);
  }
  const fillIndex = hostB ? 1 : 0;
  const valueB = hostB ? [0x10, 0] : [0x41, ...leb(b)]; // call host.b, or i32.const b
  // (local 3 = i, from i0 up to i0 + count)
  const body = [
    ...[1, 1, I32], // one local i32
    ...[0x20, 1, 0x21, 3], // i = i0
    ...[0x02, 0x40, 0x03, 0x40], // block, loop
    ...[0x20, 3, 0x20, 1, 0x20, 2, 0x6a, 0x4e, 0x0d, 1], // br_if (i >= i0 + count) out
    ...[0x20, 0, 0x20, 3, 0x41, 2, 0x74, 0x6a], // address ptr + (i << 2)
    ...[0x41, ...leb(a), 0x20, 3, 0x6c, ...valueB, 0x6a], // a * i + b
    ...[0x36, 2, 0], // i32.store
    ...[0x20, 3, 0x41, 1, 0x6a, 0x21, 3, 0x0c, 0], // i++, continue
    ...[0x0b, 0x0b, 0x0b], // end loop, block, function
  ];
  const exports = [[...name("fill"), 0x00, fillIndex]];
  if (memory === "own") exports.push([...name("memory"), 0x02, 0]);
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec(types)),
    ...(imports.length ? section(2, vec(imports)) : []),
    ...section(3, vec([[0]])),
    ...(memory === "own" ? section(5, vec([[0x00, 1]])) : []),
    ...section(7, vec(exports)),
    ...section(10, vec([[...leb(body.length), ...body]])),
  ];
  return new WebAssembly.Module(new Uint8Array(bytes));
}

/**
 * Runs fill over `n` items on 2 threads (a worker joins where it can), a few times, with
 * pauses in between so a worker that can take part has surely received the module; returns
 * the wrong items of each attempt.
 */
async function fillAttempts(id: string, view: () => Int32Array, a: number, b: number) {
  const out: number[][] = [];
  for (let k = 0; k < 5; k++) {
    await new Promise((r) => setTimeout(r, 5 * 2 ** k));
    view().fill(0);
    await fillOnTwoThreads(id, view().byteOffset, view().length);
    out.push(wrongItems(view(), a, b));
  }
  return out;
}

/** Runs fill over `n` items on 2 threads (a worker surely joins where it can). */
async function fillOnTwoThreads(id: string, ptr: number, n: number): Promise<void> {
  const pool = await readyPool(2);
  withHelperWait(
    pool,
    () =>
      parallelFor(
        {
          module: id,
          fn: "fill",
          args: [ptr, 0, 0],
          step: [0, 1, 0],
          countArg: 2,
          items: n,
          schedule: "dynamic",
          chunk: 3,
        },
        2,
      ),
    300,
  );
}

const uniqueId = (what: string) =>
  `backend-openmp/test-${what}-${Math.random().toString(36).slice(2)}`;

/** Random coefficients (never 0), so a missed item cannot pass for a written one. */
function coefficients(seed: number): [number, number] {
  const r = seededRandom(seed);
  return [1 + Math.floor(r() * 1000), 1 + Math.floor(r() * 1000)];
}

function wrongItems(view: Int32Array, a: number, b: number): number[] {
  const bad: number[] = [];
  for (let i = 0; i < view.length; i++) if (view[i] !== a * i + b) bad.push(i);
  return bad;
}

describe("modules workers cannot run", () => {
  it("a module with its own memory: every item is written, in that memory", async () => {
    const [a, b] = coefficients(41);
    const mod = fillModule("own", a, b);
    const instance = new WebAssembly.Instance(mod, {});
    const id = uniqueId("own-memory");
    registerWasmModule(id, mod, instance);
    const memory = instance.exports.memory as WebAssembly.Memory;
    const view = () => new Int32Array(memory.buffer, 64, 97);
    expect(await fillAttempts(id, view, a, b)).toEqual([[], [], [], [], []]);
  });

  it("a module with imports of its own: the run succeeds with every item written", async () => {
    const [a, b] = coefficients(42);
    const mod = fillModule("shared-import", a, 0, true);
    const id = uniqueId("extra-import");
    const imports = { ...wasmKernelImports(id), host: { b: () => b } } as WebAssembly.Imports;
    registerWasmModule(id, mod, new WebAssembly.Instance(mod, imports));
    const n = 101;
    const mem = cpuMemory();
    const ptr = mem.allocate(n * 4);
    try {
      const view = () => new Int32Array(mem.memory.buffer, ptr, n);
      expect(await fillAttempts(id, view, a, b)).toEqual([[], [], [], [], []]);
    } finally {
      mem.free(ptr);
    }
  });

  it("a module on the shared memory still runs on the workers", async () => {
    const [a, b] = coefficients(43);
    const mod = fillModule("shared-import", a, b);
    const id = uniqueId("shared");
    registerWasmModule(id, mod, new WebAssembly.Instance(mod, wasmKernelImports(id)));
    const pool = await readyPool(2);
    const n = 4000;
    const mem = cpuMemory();
    const ptr = mem.allocate(n * 4);
    try {
      // (the module reaches the workers by message: retry until one has it and joins)
      const joined = await eventually(async () => {
        const before = pool.stats().workerChunks;
        await fillOnTwoThreads(id, ptr, n);
        expect(wrongItems(new Int32Array(mem.memory.buffer, ptr, n), a, b)).toEqual([]);
        return pool.stats().workerChunks > before;
      });
      expect(joined).toBe(true);
    } finally {
      mem.free(ptr);
    }
  });

  it("moduleFailures() names a module that failed in the workers after they started, until replaced", async () => {
    const pool = await readyPool(2);
    // Importable on a 1-page memory, not on the CPU memory (whose maximum is larger).
    const mod = fillModule({ sharedImportMax: 1 }, 1, 0);
    const own = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const id = uniqueId("late-failure");
    registerWasmModule(id, mod, new WebAssembly.Instance(mod, { env: { memory: own } }));
    const failed = () => pool.moduleFailures().some((f) => f.module === id);
    expect(await eventually(failed)).toBe(true);
    // The same id, now a module the workers load: the failure is gone (and no other test
    // of this process sees it).
    const good = fillModule("shared-import", 1, 0);
    registerWasmModule(id, good, new WebAssembly.Instance(good, wasmKernelImports(id)));
    expect(await eventually(() => !failed())).toBe(true);
  });
});
