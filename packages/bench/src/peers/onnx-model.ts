/**
 * A tiny ONNX protobuf encoder, enough to build one-node models in code for the peers that
 * run ONNX (onnxruntime-web, onnxruntime-node): a ModelProto (ir_version 8, opset 13 by
 * default) holding a GraphProto with nodes, fixed-shape float inputs and outputs, and
 * optional initializers. Field numbers are those of onnx/onnx.proto3.
 *
 * ```ts
 * const bytes = matmulModel(256, 256, 256); // A [m,k] x B [k,n] -> C [m,n]
 * const conv = convModel({ x: [1, 3, 32, 32], w: [8, 3, 3, 3], bias: true, pads: [1, 1, 1, 1] });
 * ```
 */

/** TensorProto.DataType values used here. */
export const ONNX_FLOAT = 1;
export const ONNX_INT64 = 7;

// ---- protobuf wire format ----

class Writer {
  private bytes: number[] = [];

  /** An unsigned varint (numbers up to 2^53, non-negative). */
  varint(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new Error(`onnx-model: bad varint ${v}`);
    while (v >= 0x80) {
      this.bytes.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.bytes.push(v);
    return this;
  }

  /** A signed int64 as protobuf writes it: negatives as 10-byte two's complement. */
  int64(v: number): this {
    if (v >= 0) return this.varint(v);
    let x = BigInt.asUintN(64, BigInt(v));
    while (x >= 0x80n) {
      this.bytes.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    this.bytes.push(Number(x));
    return this;
  }

  private tag(field: number, wire: number): this {
    return this.varint(field * 8 + wire);
  }

  /** Field of wire type 0 (int32, int64, enum). */
  intField(field: number, v: number): this {
    return this.tag(field, 0).int64(v);
  }

  /** Field of wire type 2 (string, bytes, embedded message, packed repeated). */
  bytesField(field: number, data: Uint8Array): this {
    this.tag(field, 2).varint(data.length);
    for (const b of data) this.bytes.push(b);
    return this;
  }

  stringField(field: number, s: string): this {
    return this.bytesField(field, new TextEncoder().encode(s));
  }

  messageField(field: number, w: Writer): this {
    return this.bytesField(field, w.finish());
  }

  /** Field of wire type 5 (float). */
  floatField(field: number, v: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    for (const x of b) this.bytes.push(x);
    return this;
  }

  /** A packed repeated int64 field. */
  packedInt64(field: number, vs: readonly number[]): this {
    const inner = new Writer();
    for (const v of vs) inner.int64(v);
    return this.bytesField(field, inner.finish());
  }

  /** A packed repeated float field. */
  packedFloat(field: number, vs: ArrayLike<number>): this {
    const b = new Uint8Array(vs.length * 4);
    const dv = new DataView(b.buffer);
    for (let i = 0; i < vs.length; i++) dv.setFloat32(i * 4, vs[i], true);
    return this.bytesField(field, b);
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

// ---- the model description ----

/** A graph input or output: a tensor of fixed dims (a string dim is a symbolic one). */
export interface ValueInfo {
  name: string;
  dims: readonly (number | string)[];
  /** TensorProto.DataType (default ONNX_FLOAT). */
  elemType?: number;
}

/** A node attribute; the type is inferred from the value (int, float, string, ints, floats). */
export type AttributeValue = number | string | readonly number[] | { floats: readonly number[] };

export interface NodeDesc {
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name?: string;
  domain?: string;
  /** Numbers are INT unless they are not integers; use { floats } for a FLOATS attribute. */
  attributes?: Record<string, AttributeValue>;
  /** Names of attributes to write as FLOAT even when their value is an integer. */
  floatAttributes?: readonly string[];
}

export interface Initializer {
  name: string;
  dims: readonly number[];
  /** The values (stored as raw_data): float32, uint8, int8 or int32. */
  data: Float32Array | Uint8Array | Int8Array | Int32Array;
}

/** TensorProto.DataType of an initializer's array. */
function elemTypeOf(data: Initializer["data"]): number {
  if (data instanceof Float32Array) return ONNX_FLOAT;
  if (data instanceof Uint8Array) return 2;
  if (data instanceof Int8Array) return 3;
  return 6; // int32
}

export interface GraphDesc {
  name?: string;
  nodes: readonly NodeDesc[];
  inputs: readonly ValueInfo[];
  outputs: readonly ValueInfo[];
  initializers?: readonly Initializer[];
}

export interface ModelOptions {
  irVersion?: number;
  opset?: number;
  producer?: string;
}

function valueInfo(v: ValueInfo): Writer {
  const shape = new Writer();
  for (const d of v.dims) {
    const dim = new Writer();
    // dim_value, or dim_param for a symbolic dim
    if (typeof d === "number") dim.intField(1, d);
    else dim.stringField(2, d);
    shape.messageField(1, dim); // TensorShapeProto.dim
  }
  const tensorType = new Writer().intField(1, v.elemType ?? ONNX_FLOAT).messageField(2, shape);
  const type = new Writer().messageField(1, tensorType); // TypeProto.tensor_type
  return new Writer().stringField(1, v.name).messageField(2, type);
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_FLOATS = 6;
const ATTR_INTS = 7;

function attribute(name: string, value: AttributeValue, asFloat: boolean): Writer {
  const w = new Writer().stringField(1, name);
  if (typeof value === "string")
    return w.bytesField(4, new TextEncoder().encode(value)).intField(20, ATTR_STRING);
  if (typeof value === "number") {
    if (asFloat || !Number.isInteger(value)) return w.floatField(2, value).intField(20, ATTR_FLOAT);
    return w.intField(3, value).intField(20, ATTR_INT);
  }
  if ("floats" in value) return w.packedFloat(7, value.floats).intField(20, ATTR_FLOATS);
  const list = value as readonly number[];
  if (asFloat) return w.packedFloat(7, list).intField(20, ATTR_FLOATS);
  return w.packedInt64(8, list).intField(20, ATTR_INTS);
}

function node(n: NodeDesc): Writer {
  const w = new Writer();
  for (const i of n.inputs) w.stringField(1, i);
  for (const o of n.outputs) w.stringField(2, o);
  if (n.name) w.stringField(3, n.name);
  w.stringField(4, n.opType);
  for (const [k, v] of Object.entries(n.attributes ?? {}))
    w.messageField(5, attribute(k, v, n.floatAttributes?.includes(k) ?? false));
  if (n.domain) w.stringField(7, n.domain);
  return w;
}

function initializer(t: Initializer): Writer {
  const w = new Writer();
  for (const d of t.dims) w.intField(1, d); // dims (unpacked is accepted too; keep it simple)
  w.intField(2, elemTypeOf(t.data)).stringField(8, t.name);
  // raw_data, little-endian (the byte order of every platform the bench runs on)
  const raw = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength).slice();
  return w.bytesField(9, raw);
}

/** The bytes of a ModelProto for `graph` (what InferenceSession.create takes). */
export function buildModel(graph: GraphDesc, opts: ModelOptions = {}): Uint8Array {
  const g = new Writer();
  for (const n of graph.nodes) g.messageField(1, node(n));
  g.stringField(2, graph.name ?? "graph");
  for (const t of graph.initializers ?? []) g.messageField(5, initializer(t));
  for (const v of graph.inputs) g.messageField(11, valueInfo(v));
  for (const v of graph.outputs) g.messageField(12, valueInfo(v));
  const opset = new Writer().stringField(1, "").intField(2, opts.opset ?? 13);
  return new Writer()
    .intField(1, opts.irVersion ?? 8) // ir_version
    .stringField(2, opts.producer ?? "backplane-bench") // producer_name
    .messageField(7, g) // graph
    .messageField(8, opset) // opset_import
    .finish();
}

/** C[m,n] = A[m,k] x B[k,n] as one MatMul node; inputs "A", "B", output "C". */
export function matmulModel(m: number, k: number, n: number, opts?: ModelOptions): Uint8Array {
  return buildModel(
    {
      name: "matmul",
      nodes: [{ opType: "MatMul", inputs: ["A", "B"], outputs: ["C"], name: "matmul" }],
      inputs: [
        { name: "A", dims: [m, k] },
        { name: "B", dims: [k, n] },
      ],
      outputs: [{ name: "C", dims: [m, n] }],
    },
    opts,
  );
}

export interface ConvModelOptions extends ModelOptions {
  /** X: [N, C, ...spatial]. */
  x: readonly number[];
  /** W: [M, C / group, ...kernel]. */
  w: readonly number[];
  /** Adds a bias input "B" of shape [M]. */
  bias?: boolean;
  strides?: readonly number[];
  /** [begin_0, begin_1, ..., end_0, end_1, ...] as ONNX orders them. */
  pads?: readonly number[];
  dilations?: readonly number[];
  group?: number;
}

/** The output shape of an ONNX Conv (explicit pads). */
export function convOutputShape(o: ConvModelOptions): number[] {
  const spatial = o.x.length - 2;
  const out = [o.x[0], o.w[0]];
  for (let i = 0; i < spatial; i++) {
    const s = o.strides?.[i] ?? 1;
    const d = o.dilations?.[i] ?? 1;
    const p = (o.pads?.[i] ?? 0) + (o.pads?.[i + spatial] ?? 0);
    out.push(Math.floor((o.x[i + 2] + p - d * (o.w[i + 2] - 1) - 1) / s) + 1);
  }
  return out;
}

/** Y = Conv(X, W[, B]) as one node; inputs "X", "W" (and "B"), output "Y". */
export function convModel(o: ConvModelOptions): Uint8Array {
  const spatial = o.x.length - 2;
  const attributes: Record<string, AttributeValue> = {
    kernel_shape: o.w.slice(2),
    strides: o.strides ?? new Array(spatial).fill(1),
    pads: o.pads ?? new Array(2 * spatial).fill(0),
    dilations: o.dilations ?? new Array(spatial).fill(1),
    group: o.group ?? 1,
  };
  const inputs: ValueInfo[] = [
    { name: "X", dims: o.x },
    { name: "W", dims: o.w },
  ];
  if (o.bias) inputs.push({ name: "B", dims: [o.w[0]] });
  return buildModel(
    {
      name: "conv",
      nodes: [
        {
          opType: "Conv",
          inputs: inputs.map((i) => i.name),
          outputs: ["Y"],
          name: "conv",
          attributes,
        },
      ],
      inputs,
      outputs: [{ name: "Y", dims: convOutputShape(o) }],
    },
    o,
  );
}
