/**
 * transpose_u8 and transpose_f32 (the WASM transposes the oneDNN convolutions use for
 * their channels-last layouts) against a plain loop: one to nine rows (the byte
 * transpose's 2- and 3-row paths, the last rows % 4), columns around the 16-column blocks
 * and the tiles, empty matrices, and nothing written past the end; and shifted_planes_f32
 * (the stacked input of a kernel cut into 3x3 blocks) on shifts past every edge.
 */
import { backends, empty, ready } from "@backplane/core";
import {
  addressOf,
  chunkArgs,
  chunksOf,
  parallelService,
  setParallelService,
  wasmModule,
} from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";
import { transposeF32 } from "../src/kernels/transpose.ts";
import { modules } from "../src/kernels/wasm.ts";

const POISON = { uint8: 0xa5, float32: -7.25 } as const;

function transposed(
  rows: number,
  cols: number,
  seed: number,
  dtype: "uint8" | "float32" = "uint8",
): { got: number[]; want: number[] } {
  const src = empty([Math.max(1, rows * cols)], { dtype });
  const dst = empty([Math.max(1, rows * cols) + 64], { dtype });
  try {
    const s = src.hostData() as Uint8Array | Float32Array;
    for (let i = 0; i < rows * cols; i++)
      s[i] =
        dtype === "uint8" ? (i * 2654435761 + seed) >>> 24 : ((i * 7919 + seed) % 2003) - 1001.5;
    const d = dst.hostData() as Uint8Array | Float32Array;
    d.fill(POISON[dtype]); // 64 elements past the end must stay untouched
    const k = modules.kernels!;
    if (dtype === "uint8") k.transpose_u8(addressOf(src), rows, cols, addressOf(dst));
    else transposeF32(addressOf(src), rows, cols, addressOf(dst));
    const want: number[] = [];
    for (let c = 0; c < cols; c++) for (let r = 0; r < rows; r++) want.push(s[r * cols + c]);
    want.push(...Array(64).fill(POISON[dtype]));
    return { got: Array.from(d.subarray(0, rows * cols + 64)), want };
  } finally {
    src.dispose();
    dst.dispose();
  }
}

describe("transpose_u8", () => {
  it("matches a plain loop on odd and edge shapes, and writes nothing past the end", async () => {
    await ready(WASM_BACKEND);
    const bad: string[] = [];
    let seed = 1;
    for (const rows of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 67, 130])
      for (const cols of [0, 1, 3, 15, 16, 17, 31, 48, 63, 64, 65, 100, 129]) {
        const { got, want } = transposed(rows, cols, seed++);
        if (got.some((v, i) => v !== want[i])) bad.push(`${rows} x ${cols}`);
      }
    expect(bad).toEqual([]);
  });

  it("transposes a layer-sized image (256 channels x 56 x 56, and back)", async () => {
    await ready(WASM_BACKEND);
    for (const [rows, cols] of [
      [256, 56 * 56],
      [56 * 56, 256],
      [3, 224 * 224],
    ]) {
      const { got, want } = transposed(rows, cols, rows);
      expect(
        got.every((v, i) => v === want[i]),
        `${rows} x ${cols}`,
      ).toBe(true);
    }
  });
});

describe("transpose_f32", () => {
  it("matches a plain loop on odd and edge shapes, and writes nothing past the end", async () => {
    await ready(WASM_BACKEND);
    const bad: string[] = [];
    let seed = 1;
    for (const rows of [0, 1, 2, 3, 4, 5, 7, 31, 32, 33, 67])
      for (const cols of [0, 1, 3, 4, 5, 31, 32, 33, 65, 196]) {
        const { got, want } = transposed(rows, cols, seed++, "float32");
        if (got.some((v, i) => v !== want[i])) bad.push(`${rows} x ${cols}`);
      }
    expect(bad).toEqual([]);
  });

  it("transposes MobileNet's depthwise activations (32 x 112 x 112, 576 x 14 x 14, and back) in three column bands", async () => {
    await ready(WASM_BACKEND);
    // Three threads: the chunks backend-openmp's pool would hand its workers (the core's
    // chunksOf and chunkArgs), of uneven sizes, each a band of source columns, run here one
    // after another on the module's exports (this package's tests do not load the pool).
    using _ = backends.openmp.flags({ numThreads: 3 });
    let chunks = 0;
    const previous = parallelService();
    setParallelService({
      threads: () => 3,
      run(task, threads) {
        const fn = wasmModule(task.module)?.instance.exports[task.fn] as (...a: number[]) => void;
        chunksOf(task, threads).forEach(([i0, count], thread) => {
          chunks++;
          fn(...chunkArgs(task, i0, count, thread));
        });
      },
    });
    using _s = { [Symbol.dispose]: () => setParallelService(previous) };
    for (const [rows, cols] of [
      [32, 112 * 112],
      [112 * 112, 32],
      [576, 14 * 14],
      [14 * 14, 576],
    ]) {
      const { got, want } = transposed(rows, cols, rows, "float32");
      expect(
        got.every((v, i) => v === want[i]),
        `${rows} x ${cols}`,
      ).toBe(true);
    }
    expect(chunks).toBeGreaterThanOrEqual(9); // three bands for each of the three large ones
  });
});

describe("shifted_planes_f32", () => {
  it("copies each plane shifted, zero outside the source, on shifts past every edge, and writes nothing past the end", async () => {
    await ready(WASM_BACKEND);
    const k = modules.kernels!;
    const bad: string[] = [];
    for (const [planes, h, w] of [
      [1, 1, 1],
      [2, 5, 7],
      [3, 27, 27],
      [1, 4, 3],
    ])
      for (const [rows, cols] of [
        [h + 2, w + 2],
        [1, 1],
        [h, w],
      ])
        for (const dy of [-3, -1, 0, 2, h + 1])
          for (const dx of [-4, -1, 0, 3, w]) {
            const src = empty([planes * h * w], { dtype: "float32" });
            const dst = empty([planes * rows * cols + 16], { dtype: "float32" });
            const s = src.hostData() as Float32Array;
            for (let i = 0; i < s.length; i++) s[i] = i + 0.5;
            const d = dst.hostData() as Float32Array;
            d.fill(POISON.float32);
            k.shifted_planes_f32(addressOf(src), planes, h, w, dy, dx, addressOf(dst), rows, cols);
            for (let p = 0; p < planes; p++)
              for (let u = 0; u < rows; u++)
                for (let v = 0; v < cols; v++) {
                  const [y, x] = [u + dy, v + dx];
                  const want = y >= 0 && y < h && x >= 0 && x < w ? s[(p * h + y) * w + x] : 0;
                  if (d[(p * rows + u) * cols + v] !== want)
                    bad.push(`${planes}x${h}x${w} -> ${rows}x${cols} by (${dy}, ${dx})`);
                }
            if (d.subarray(planes * rows * cols).some((v) => v !== POISON.float32))
              bad.push(
                `${planes}x${h}x${w} -> ${rows}x${cols} by (${dy}, ${dx}): wrote past the end`,
              );
            src.dispose();
            dst.dispose();
          }
    expect([...new Set(bad)]).toEqual([]);
  });
});
