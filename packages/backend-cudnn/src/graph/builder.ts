/**
 * Builds cuDNN operation graphs node by node: tensors, convolution, pointwise, matmul and
 * reduction operations, then the finalized OPERATIONGRAPH. The builder owns every descriptor
 * it creates and destroys them in dispose() (an execution plan keeps what it needs).
 */
import type { CudnnSymbols } from "../layer.ts";
import { ATTR, CONV_MODE, DATA, POINTWISE, REDUCE } from "../native/api.ts";
import { Descriptor, destroyAll } from "./descriptor.ts";

export type DataType = keyof typeof DATA;
export type PointwiseMode = keyof typeof POINTWISE;

export interface TensorSpec {
  /** The id a variant pack binds a device pointer to; virtual tensors need one too. */
  uid: number;
  dtype: DataType;
  dims: readonly number[];
  strides: readonly number[];
  /** An intermediate that never reaches memory. */
  virtual?: boolean;
  /** A host scalar passed by value at execution (the attention scale). */
  byValue?: boolean;
  /** Alignment of the data pointer in bytes (16 unless the tensor's offset says less). */
  alignment?: number;
}

export interface ConvSpec {
  prePadding: readonly number[];
  postPadding: readonly number[];
  stride: readonly number[];
  dilation: readonly number[];
  compute: DataType;
}

const i64 = (values: readonly number[]) => ({ type: "CUDNN_TYPE_INT64" as const, values });
const dataType = (t: DataType) => ({ type: "CUDNN_TYPE_DATA_TYPE" as const, values: [DATA[t]] });
const desc = (...values: Descriptor[]) => ({
  type: "CUDNN_TYPE_BACKEND_DESCRIPTOR" as const,
  values,
});

export class GraphBuilder {
  private readonly owned: Descriptor[] = [];
  private readonly ops: Descriptor[] = [];
  /** The tensors by uid, as built. */
  readonly tensors = new Map<number, TensorSpec>();

  /**
   * `handle`: the cuDNN handle of the device the graph will run on. cudnn_graph.h lists the
   * operation graph's handle as required (deprecated, yet it is how cuDNN learns the device):
   * without it an H200 got engine configs for "smVersion 0", which finalize refused or
   * execute answered with CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH.
   */
  constructor(
    readonly lib: CudnnSymbols,
    readonly handle?: bigint,
  ) {}

  private make(type: Parameters<typeof Descriptor.create>[1]): Descriptor {
    const d = Descriptor.create(this.lib, type);
    this.owned.push(d);
    return d;
  }

  tensor(t: TensorSpec): Descriptor {
    const d = this.make("CUDNN_BACKEND_TENSOR_DESCRIPTOR")
      .set("DATA_TYPE", ATTR.CUDNN_ATTR_TENSOR_DATA_TYPE, dataType(t.dtype))
      .set("DIMENSIONS", ATTR.CUDNN_ATTR_TENSOR_DIMENSIONS, i64(t.dims))
      .set("STRIDES", ATTR.CUDNN_ATTR_TENSOR_STRIDES, i64(t.strides))
      .set("UNIQUE_ID", ATTR.CUDNN_ATTR_TENSOR_UNIQUE_ID, i64([t.uid]))
      .set("BYTE_ALIGNMENT", ATTR.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, i64([t.alignment ?? 16]));
    if (t.virtual)
      d.set("IS_VIRTUAL", ATTR.CUDNN_ATTR_TENSOR_IS_VIRTUAL, {
        type: "CUDNN_TYPE_BOOLEAN",
        values: [true],
      });
    if (t.byValue)
      d.set("IS_BY_VALUE", ATTR.CUDNN_ATTR_TENSOR_IS_BY_VALUE, {
        type: "CUDNN_TYPE_BOOLEAN",
        values: [true],
      });
    this.tensors.set(t.uid, t);
    return d.finalize();
  }

  /** Forward convolution (cross-correlation, as torch's conv2d): y = conv(x, w). */
  convolution(x: Descriptor, w: Descriptor, y: Descriptor, c: ConvSpec): Descriptor {
    const conv = this.make("CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR")
      .set("COMP_TYPE", ATTR.CUDNN_ATTR_CONVOLUTION_COMP_TYPE, dataType(c.compute))
      .set("CONV_MODE", ATTR.CUDNN_ATTR_CONVOLUTION_CONV_MODE, {
        type: "CUDNN_TYPE_CONVOLUTION_MODE",
        values: [CONV_MODE.CUDNN_CROSS_CORRELATION],
      })
      .set("SPATIAL_DIMS", ATTR.CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, i64([c.stride.length]))
      .set("PRE_PADDINGS", ATTR.CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, i64(c.prePadding))
      .set("POST_PADDINGS", ATTR.CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, i64(c.postPadding))
      .set("FILTER_STRIDES", ATTR.CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, i64(c.stride))
      .set("DILATIONS", ATTR.CUDNN_ATTR_CONVOLUTION_DILATIONS, i64(c.dilation))
      .finalize();
    const op = this.make("CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR")
      .set("X", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, desc(x))
      .set("W", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, desc(w))
      .set("Y", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, desc(y))
      .set("CONV_DESC", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, desc(conv))
      .set("ALPHA", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, {
        type: "CUDNN_TYPE_FLOAT",
        values: [1],
      })
      .set("BETA", ATTR.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, {
        type: "CUDNN_TYPE_FLOAT",
        values: [0],
      })
      .finalize();
    this.ops.push(op);
    return op;
  }

  /**
   * y = mode(x[, b]) elementwise with broadcasting; BINARY_SELECT takes `t` as the condition
   * (y = t ? x : b); GEN_INDEX writes each element's index along `axis`.
   */
  pointwise(
    mode: PointwiseMode,
    io: { x: Descriptor; b?: Descriptor; t?: Descriptor; y: Descriptor },
    opts: { axis?: number; compute?: DataType } = {},
  ): Descriptor {
    const pw = this.make("CUDNN_BACKEND_POINTWISE_DESCRIPTOR")
      .set("MODE", ATTR.CUDNN_ATTR_POINTWISE_MODE, {
        type: "CUDNN_TYPE_POINTWISE_MODE",
        values: [POINTWISE[mode]],
      })
      .set(
        "MATH_PREC",
        ATTR.CUDNN_ATTR_POINTWISE_MATH_PREC,
        dataType(opts.compute ?? "CUDNN_DATA_FLOAT"),
      );
    if (opts.axis !== undefined) pw.set("AXIS", ATTR.CUDNN_ATTR_POINTWISE_AXIS, i64([opts.axis]));
    pw.finalize();
    const op = this.make("CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR")
      .set("PW_DESCRIPTOR", ATTR.CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc(pw))
      .set("XDESC", ATTR.CUDNN_ATTR_OPERATION_POINTWISE_XDESC, desc(io.x));
    if (io.b) op.set("BDESC", ATTR.CUDNN_ATTR_OPERATION_POINTWISE_BDESC, desc(io.b));
    if (io.t) op.set("TDESC", ATTR.CUDNN_ATTR_OPERATION_POINTWISE_TDESC, desc(io.t));
    op.set("YDESC", ATTR.CUDNN_ATTR_OPERATION_POINTWISE_YDESC, desc(io.y)).finalize();
    this.ops.push(op);
    return op;
  }

  /** c = a @ b over the last two dims, batched over the leading ones. */
  matmul(
    a: Descriptor,
    b: Descriptor,
    c: Descriptor,
    compute: DataType = "CUDNN_DATA_FLOAT",
  ): Descriptor {
    const mm = this.make("CUDNN_BACKEND_MATMUL_DESCRIPTOR")
      .set("COMP_TYPE", ATTR.CUDNN_ATTR_MATMUL_COMP_TYPE, dataType(compute))
      .finalize();
    const op = this.make("CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR")
      .set("ADESC", ATTR.CUDNN_ATTR_OPERATION_MATMUL_ADESC, desc(a))
      .set("BDESC", ATTR.CUDNN_ATTR_OPERATION_MATMUL_BDESC, desc(b))
      .set("CDESC", ATTR.CUDNN_ATTR_OPERATION_MATMUL_CDESC, desc(c))
      .set("DESC", ATTR.CUDNN_ATTR_OPERATION_MATMUL_DESC, desc(mm))
      .finalize();
    this.ops.push(op);
    return op;
  }

  /** y = reduce(x) over the dims where y has size 1. */
  reduction(operator: "MAX" | "ADD", x: Descriptor, y: Descriptor): Descriptor {
    const red = this.make("CUDNN_BACKEND_REDUCTION_DESCRIPTOR")
      .set("OPERATOR", ATTR.CUDNN_ATTR_REDUCTION_OPERATOR, {
        type: "CUDNN_TYPE_REDUCTION_OPERATOR_TYPE",
        values: [
          operator === "MAX" ? REDUCE.CUDNN_REDUCE_TENSOR_MAX : REDUCE.CUDNN_REDUCE_TENSOR_ADD,
        ],
      })
      .set("COMP_TYPE", ATTR.CUDNN_ATTR_REDUCTION_COMP_TYPE, dataType("CUDNN_DATA_FLOAT"))
      .finalize();
    const op = this.make("CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR")
      .set("XDESC", ATTR.CUDNN_ATTR_OPERATION_REDUCTION_XDESC, desc(x))
      .set("YDESC", ATTR.CUDNN_ATTR_OPERATION_REDUCTION_YDESC, desc(y))
      .set("DESC", ATTR.CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc(red))
      .finalize();
    this.ops.push(op);
    return op;
  }

  /** The finalized OPERATIONGRAPH of every operation added so far. */
  graph(): Descriptor {
    const g = this.make("CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR");
    // No handle (0n: no device yet) leaves cuDNN to refuse the plan with its own reason.
    if (this.handle)
      g.set("HANDLE", ATTR.CUDNN_ATTR_OPERATIONGRAPH_HANDLE, {
        type: "CUDNN_TYPE_HANDLE",
        values: [this.handle],
      });
    return g.set("OPS", ATTR.CUDNN_ATTR_OPERATIONGRAPH_OPS, desc(...this.ops)).finalize();
  }

  get operationCount(): number {
    return this.ops.length;
  }

  dispose(): void {
    destroyAll(this.owned.reverse());
    this.owned.length = 0;
  }
}
