/**
 * transpose_u8 (the WASM byte transpose the onednn engine's int8 convolution uses for its
 * layouts) against a plain loop: one to nine rows (its 2- and 3-row paths, the last rows
 * % 4), columns around its 16-column blocks and 64 x 64 tiles, and empty matrices.
 */
import { empty, ready } from "@backplane/core";
import { addressOf } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";
import { modules } from "../src/kernels/wasm.ts";

function transposed(rows: number, cols: number, seed: number): { got: number[]; want: number[] } {
  const src = empty([Math.max(1, rows * cols)], { dtype: "uint8" });
  const dst = empty([Math.max(1, rows * cols) + 64], { dtype: "uint8" });
  try {
    const s = src.hostData() as Uint8Array;
    for (let i = 0; i < rows * cols; i++) s[i] = (i * 2654435761 + seed) >>> 24;
    const d = dst.hostData() as Uint8Array;
    d.fill(0xa5); // poison, with 64 bytes past the end that must stay untouched
    modules.kernels!.transpose_u8(addressOf(src), rows, cols, addressOf(dst));
    const want: number[] = [];
    for (let c = 0; c < cols; c++) for (let r = 0; r < rows; r++) want.push(s[r * cols + c]);
    want.push(...Array(64).fill(0xa5));
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
