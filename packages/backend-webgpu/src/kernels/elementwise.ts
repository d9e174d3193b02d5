/**
 * add, mul (broadcasting), relu, gelu (exact and tanh). One invocation per output
 * element; inputs are read through their strides (views and broadcasts cost nothing),
 * with a plain indexed path when everything is contiguous and the same shape.
 */
import type { Tensor } from "@backplane/core";
import type {
  AnyKernelDefinition,
  BinaryParams,
  KernelDefinition,
  UnaryParams,
} from "@backplane/core/backend";
import { grid, gridRefusal, groupLimit, launch, Meta, pipelineFor } from "../exec.ts";
import {
  baseChecks,
  binding,
  broadcastStrides,
  bytesOf,
  collapse,
  FLOAT_DTYPES,
  MAX_RANK,
  output,
  product,
  VERBOSE,
  wgslType,
} from "./common.ts";

const WG = 256;
const PRIORITY = 100;

/** Index walk: fills `offs` (per operand) from the flat output index `i` (meta layout below). */
function walk(operands: number): string {
  // meta: [n, rank, off_0..off_{k-1}, shape[8], strides_0[8], ..., strides_{k-1}[8]]
  const base = 2 + operands;
  const lines = [];
  for (let k = 0; k < operands; k++) lines.push(`  var o${k} = prm[${2 + k}];`);
  lines.push("  var rem = i;");
  lines.push("  for (var d = i32(prm[1]) - 1; d >= 0; d--) {");
  lines.push(`    let size = prm[${base}u + u32(d)];`);
  lines.push("    let idx = rem % size;");
  lines.push("    rem = rem / size;");
  for (let k = 0; k < operands; k++)
    lines.push(`    o${k} += idx * prm[${base + MAX_RANK * (k + 1)}u + u32(d)];`);
  lines.push("  }");
  return lines.join("\n");
}

const header = (T: string, enable: string, reads: number) =>
  `${enable}alias T = ${T};
${Array.from({ length: reads }, (_, k) => `@group(0) @binding(${k}) var<storage, read> X${k}: array<T>;`).join("\n")}
@group(0) @binding(${reads}) var<storage, read_write> Y: array<T>;
@group(0) @binding(${reads + 1}) var<storage, read> prm: array<u32>;
`;

function binaryCode(dtype: string, opExpr: string, strided: boolean): string {
  const { T, enable } = wgslType(dtype);
  return `${header(T, enable, 2)}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * ${WG}u;
  if (i >= prm[0]) { return; }
${strided ? walk(2) : "  let o0 = prm[2] + i;\n  let o1 = prm[3] + i;"}
  let a = X0[o0];
  let b = X1[o1];
  Y[i] = ${opExpr};
}`;
}

/**
 * erfc(z) for z >= 0 to ~1.2e-7 relative everywhere (Numerical Recipes' erfcc, a Chebyshev
 * fit of exp(z^2) erfc(z)). Relative, not absolute: gelu's negative tail is 0.5 x erfc(|z|),
 * which the former 0.5 x (1 + erf(z)) lost to cancellation (7.1.26's 1.5e-7 absolute error
 * was 1% of gelu at x = -4.5 and all of it past -5.5).
 */
const ERFC = `
fn erfc_(z: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.5 * z);
  let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + p);
}`;

/**
 * torch's clamp_min(x, 0): only x < 0 becomes 0, so -0 stays -0 (max() may make it +0)
 * and NaN passes through. Floats are told by their bits: a shader may fold NaN compares,
 * and may flush a subnormal to zero before comparing (SwiftShader: -1e-40 < 0 is false,
 * which let a negative subnormal through). Negative: the sign bit and a nonzero
 * magnitude up to -inf's (0xff800000); above that, a NaN.
 */
function reluCode(dtype: string): string {
  if (dtype === "int32") return "fn f(x: T) -> T { return select(x, T(0), x < T(0)); }";
  return `fn f(x: T) -> T {
  let b = bitcast<u32>(f32(x));
  if (b > 0x80000000u && b <= 0xff800000u) { return T(0); }
  return x;
}`;
}

function unaryCode(dtype: string, kind: "relu" | "gelu" | "gelu-tanh", strided: boolean): string {
  const { T, enable } = wgslType(dtype);
  const f =
    kind === "relu"
      ? reluCode(dtype)
      : kind === "gelu"
        ? // x < 0: 0.5 x erfc(|x| / sqrt 2); else x (1 - 0.5 erfc(x / sqrt 2)). NaN takes the
          // second branch and stays NaN; -inf gives -inf * 0 = NaN, as torch.
          `${ERFC}
fn f(v: T) -> T {
  let x = f32(v);
  let e = erfc_(abs(x) * 0.7071067811865476);
  return T(select(x * (1.0 - 0.5 * e), 0.5 * x * e, x < 0.0));
}`
        : // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): no 1 + tanh(u) to cancel as u -> -inf
          // (where shaders' tanh is loosest); exp overflows to inf there and gives -0, as torch.
          `fn f(v: T) -> T {
  let x = f32(v);
  let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return T(x / (1.0 + exp(-2.0 * u)));
}`;
  return `${header(T, enable, 1)}
${f}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * ${WG}u;
  if (i >= prm[0]) { return; }
${strided ? walk(1) : "  let o0 = prm[2] + i;"}
  Y[i] = f(X0[o0]);
}`;
}

type Layout = { shape: number[]; strides: number[][]; flat: boolean };

/**
 * How the shader walks the operands: flat (all contiguous, one shape) or by the strides of
 * the dims left after merging. Only the merged rank must fit MAX_RANK: a rank-9 tensor of
 * size-1 dims, or any contiguous one, is a flat walk (it was refused by its nominal rank).
 */
function binaryLayout(p: BinaryParams): Layout {
  const { a, b, outShape } = p;
  if (a.isContiguous && b.isContiguous && a.shape.join() === b.shape.join())
    return { shape: [product(outShape)], strides: [[1], [1]], flat: true };
  const c = collapse(outShape, [
    broadcastStrides(a.shape, a.strides, outShape),
    broadcastStrides(b.shape, b.strides, outShape),
  ]);
  return { ...c, flat: false };
}

function unaryLayout(x: Tensor): Layout {
  if (x.isContiguous) return { shape: [x.numel], strides: [[1]], flat: true };
  return { ...collapse(x.shape, [x.strides as number[]]), flat: false };
}

function metaFor(
  n: number,
  offsets: number[],
  shape: number[],
  strides: number[][],
): Uint32Array<ArrayBuffer> {
  const m = new Meta().u32(n, shape.length, ...offsets).list(shape, MAX_RANK, 1);
  for (const st of strides) m.list(st, MAX_RANK);
  return m.build();
}

function binary(op: "add" | "mul"): KernelDefinition<BinaryParams> {
  const name = `wgsl-${op}`;
  const expr = op === "add" ? "a + b" : "a * b";
  return {
    op,
    name,
    device: "webgpu",
    dtypes: [...FLOAT_DTYPES, "int32"],
    deterministic: true,
    verboseFlags: VERBOSE,
    priority: PRIORITY,
    supports(p) {
      const n = product(p.outShape);
      const s = baseChecks(p.dtype, [p.a, p.b], bytesOf(p.dtype, n));
      if (typeof s === "string") return s;
      const rank = binaryLayout(p).shape.length;
      if (rank > MAX_RANK)
        return `output rank ${rank} (after merging dims) is more than ${MAX_RANK}`;
      return gridRefusal(Math.ceil(n / WG), s.limits.maxComputeWorkgroupsPerDimension) ?? true;
    },
    run(p) {
      const out = output(p.outShape, p.dtype);
      const n = out.numel;
      if (n === 0) return out;
      const { a, b } = p;
      const c = binaryLayout(p);
      const strided = !c.flat;
      const pipeline = pipelineFor(`${name}:${p.dtype}:${strided ? "s" : "c"}`, 2, 1, () =>
        binaryCode(p.dtype, expr, strided),
      );
      launch({
        kernel: name,
        op,
        params: p,
        pipeline,
        reads: [binding(a), binding(b)],
        writes: [binding(out)],
        meta: metaFor(n, [a.offset, b.offset], c.shape, c.strides),
        groups: grid(Math.ceil(n / WG), groupLimit()),
      });
      return out;
    },
  };
}

function unary(
  op: "relu" | "gelu",
  dtypes: readonly ("float32" | "float16" | "int32")[],
): KernelDefinition<UnaryParams> {
  const name = `wgsl-${op}`;
  return {
    op,
    name,
    device: "webgpu",
    dtypes,
    deterministic: true,
    verboseFlags: VERBOSE,
    priority: PRIORITY,
    supports(p) {
      const n = p.x.numel;
      const s = baseChecks(p.dtype, [p.x], bytesOf(p.dtype, n));
      if (typeof s === "string") return s;
      const rank = unaryLayout(p.x).shape.length;
      if (rank > MAX_RANK) return `rank ${rank} (after merging dims) is more than ${MAX_RANK}`;
      return gridRefusal(Math.ceil(n / WG), s.limits.maxComputeWorkgroupsPerDimension) ?? true;
    },
    run(p) {
      const { x } = p;
      const out = output(x.shape, p.dtype);
      const n = out.numel;
      if (n === 0) return out;
      const kind = op === "relu" ? "relu" : p.approximate === "tanh" ? "gelu-tanh" : "gelu";
      const c = unaryLayout(x);
      const strided = !c.flat;
      const pipeline = pipelineFor(`wgsl-${kind}:${p.dtype}:${strided ? "s" : "c"}`, 1, 1, () =>
        unaryCode(p.dtype, kind, strided),
      );
      launch({
        kernel: name,
        op,
        params: p,
        pipeline,
        reads: [binding(x)],
        writes: [binding(out)],
        meta: metaFor(n, [x.offset], c.shape, c.strides),
        groups: grid(Math.ceil(n / WG), groupLimit()),
      });
      return out;
    },
  };
}

export const elementwiseKernels: AnyKernelDefinition[] = [
  binary("add"),
  binary("mul"),
  unary("relu", [...FLOAT_DTYPES, "int32"]),
  unary("gelu", FLOAT_DTYPES),
];
