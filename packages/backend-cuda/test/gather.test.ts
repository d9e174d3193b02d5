/**
 * contiguous() of a strided view on cuda: the memory's gather() launches kernels/copy.cu's
 * copy2d. Over the RecordingLayer (which runs no kernel), each recorded copy2d launch is
 * carried out by a model of the kernel written from copy.cu, so the test checks the whole host
 * side (kernel by element size, offset table, strides, pointers) against the CPU's own gather.
 */
import { type DType, Tensor, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { launchArg, type RecordedLaunch, type RecordingLayer } from "../src/internals.ts";
import { SM80, withRecording } from "./helpers.ts";

/** The bytes of the fake allocation holding `ptr`, and ptr's offset in it. */
function at(layer: RecordingLayer, ptr: bigint): [Uint8Array, number] {
  for (const [base, bytes] of layer.memory)
    if (ptr >= base && ptr < base + BigInt(bytes.byteLength)) return [bytes, Number(ptr - base)];
  throw new Error(`0x${ptr.toString(16)} is in no allocation`);
}

/** copy2d (kernels/copy.cu), element by element. */
function runCopy2d(layer: RecordingLayer, l: RecordedLaunch): void {
  const w = Number(/copy2d_b(\d+)/.exec(l.kernel)![1]);
  const [dst, dstAt] = at(layer, launchArg(l, 0, "ptr") as bigint);
  const [src, srcAt] = at(layer, launchArg(l, 1, "ptr") as bigint);
  const tablePtr = launchArg(l, 2, "ptr") as bigint;
  const n = (i: number) => Number(launchArg(l, i, "i64"));
  const [batchStride, batch, rows, cols, rs, cs, dBatch, dRs, dCs] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11,
  ].map(n);
  const [tbl, tblAt] = tablePtr === 0n ? [undefined, 0] : at(layer, tablePtr);
  const table = tbl && new DataView(tbl.buffer, tbl.byteOffset + tblAt, batch * 8);
  for (let b = 0; b < batch!; b++)
    for (let r = 0; r < rows!; r++)
      for (let c = 0; c < cols!; c++) {
        const base = table ? Number(table.getBigInt64(b * 8, true)) : b * batchStride!;
        const so = base + r * rs! + c * cs!;
        const d = b * dBatch! + r * dRs! + c * dCs!;
        dst.set(src.subarray(srcAt + so * w, srcAt + (so + 1) * w), dstAt + d * w);
      }
}

/** A view of t's storage (retained, as the core's own views are). */
function view(t: Tensor, shape: number[], strides: number[], offset: number): Tensor {
  t.storage.retain();
  return new Tensor(t.storage, t.dtype, shape, strides, offset);
}

describe("cuda memory gather (contiguous() of a strided view)", () => {
  it("copies every element size and view kind as the CPU does", async () => {
    await withRecording({ devices: [SM80] }, async (layer) => {
      const cases: [DType, number[] | boolean[]][] = [
        ["float32", Array.from({ length: 60 }, (_, i) => i * 1.5 - 7)],
        ["float64", Array.from({ length: 60 }, (_, i) => i / 7 - 3)],
        ["float16", Array.from({ length: 60 }, (_, i) => i - 29)],
        ["int32", Array.from({ length: 60 }, (_, i) => i * 37 - 500)],
        ["bool", Array.from({ length: 60 }, (_, i) => i % 3 === 0)],
      ];
      for (const [dtype, data] of cases) {
        const cpu = tensor(data, { dtype, shape: [3, 4, 5] });
        const gpu = cpu.to("cuda");
        const views = [
          (t: Tensor) => t.transpose(0, 2), // [5, 4, 3]: a batch of transposed matrices
          (t: Tensor) => t.permute([1, 0, 2]), // leading dims reordered
          (t: Tensor) => view(t, [2, 3], [1, 5], 21), // a gapped, transposed window at an offset
          (t: Tensor) => view(t, [4, 2, 5], [0, 20, 1], 3), // a broadcast (stride 0) batch
          (t: Tensor) => view(t, [7], [8], 2), // 1-D, every 8th element
        ];
        for (const make of views) {
          const [v, w] = [make(cpu), make(gpu)];
          const c = w.contiguous();
          expect(c.device).toBe(w.device);
          expect(c.isContiguous).toBe(true);
          const l = layer.launches.at(-1)!;
          expect(l.kernel).toBe(
            `copy2d_b${dtype === "float64" ? 8 : dtype === "float16" ? 2 : dtype === "bool" ? 1 : 4}`,
          );
          runCopy2d(layer, l);
          expect(await c.array(), `${dtype} [${v.shape}] / [${v.strides}]`).toEqual(
            await v.array(),
          );
          for (const t of [v, w, c]) t.dispose();
        }
        for (const t of [cpu, gpu]) t.dispose();
      }
    });
  });

  it("on two devices each copy2d launches in its own device's context", async () => {
    await withRecording({ devices: [SM80, SM80] }, async (layer) => {
      const on = (d: string) => tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] }).to(d);
      const [a0, a1] = [on("cuda:0"), on("cuda:1")];
      const gather = (t: Tensor) => view(t, [3, 2], [1, 3], 0).contiguous();
      // Both devices have their stream and kernels before the launches looked at.
      const warm = [gather(a0), gather(a1)];
      layer.clear();
      const out = [gather(a0), gather(a1), gather(a0)];
      expect(layer.launches.map((l) => l.device)).toEqual([0, 1, 0]);
      expect(out.map((t) => t.device)).toEqual(["cuda:0", "cuda:1", "cuda:0"]);
      for (const t of [a0, a1, ...warm, ...out]) t.dispose();
    });
  });

  it("an empty view launches nothing; a bad request is refused before any launch", async () => {
    await withRecording({ devices: [SM80] }, async (layer) => {
      const gpu = tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] }).to("cuda");
      const before = layer.launches.length;
      const e = view(gpu, [0, 3], [1, 2], 0).contiguous();
      expect(e.shape).toEqual([0, 3]);
      expect(layer.launches.length).toBe(before);
      const mem = gpu.storage.memory;
      const out = tensor([0, 0], { shape: [2] }).to("cuda");
      const h = (t: Tensor) => t.storage.handle;
      expect(() => mem.gather!(h(gpu), 5, [2], [1], 4, h(out))).toThrow(
        /gather source: bytes \[24, 28\) are outside the 24-byte storage/,
      );
      expect(() => mem.gather!(h(gpu), 0, [3], [1], 4, h(out))).toThrow(
        /gather destination: bytes \[0, 12\) are outside the 8-byte storage/,
      );
      expect(() => mem.gather!(h(gpu), 0, [2], [-1], 4, h(out))).toThrow(/integers >= 0/);
      expect(() => mem.gather!(h(gpu), 0, [2], [1], 3, h(out))).toThrow(
        /no copy kernel for 3-byte/,
      );
      expect(layer.launches.length).toBe(before);
      for (const t of [gpu, out, e]) t.dispose();
    });
  });
});
