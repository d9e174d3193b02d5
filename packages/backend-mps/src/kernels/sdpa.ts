/**
 * scaledDotProductAttention on mps. The helper runs MPSGraph's own attention op where the
 * OS has it (macOS 15+, same heads, no bool or causal mask) and a composed graph otherwise
 * (matmul, scale, mask, softmax, matmul), grouping query heads for GQA. Operands are
 * gathered to [batch, heads, rows, dim]; a mask to [batch, headsQ, L, S].
 */
import type { Tensor } from "@backplane/core";
import {
  type KernelDefinition,
  leadingBroadcastStrides,
  type SdpaParams,
  sizeOf,
} from "@backplane/core/backend";
import { MASK } from "../native/abi.ts";
import {
  dtypeCode,
  dtypeSupport,
  FLOAT_DTYPES,
  gather,
  handleOf,
  layoutSupport,
  produce,
  withOperands,
} from "./common.ts";

/** `t` read as [...lead, rows, cols] (its batch dims broadcast to `lead`). */
function gatherBatched(t: Tensor, lead: readonly number[]) {
  const bs = leadingBroadcastStrides(t.shape.slice(0, -2), t.strides.slice(0, -2), lead);
  return gather(t, [...lead, ...t.shape.slice(-2)], [...bs, ...t.strides.slice(-2)]);
}

function run(p: SdpaParams): Tensor {
  const lead = p.batchShape.slice(0, -1);
  const headsQ = p.batchShape.at(-1) ?? 1;
  const group = p.enableGqa && p.headsQ !== p.headsKV ? p.headsQ / p.headsKV : 1;
  const headsKV = headsQ / group;
  const kvLead = [...lead, headsKV];
  const maskKind = p.isCausal
    ? MASK.CAUSAL
    : p.maskKind === "bool"
      ? MASK.BOOL
      : p.maskKind === "additive"
        ? MASK.ADDITIVE
        : MASK.NONE;
  const shape = [sizeOf(lead), headsQ, headsKV, p.L, p.S, p.E, p.Ev];
  return produce([...p.batchShape, p.L, p.Ev], p.query, (out) =>
    withOperands((take) => {
      const mask = p.attnMask
        ? take(
            gather(
              p.attnMask,
              [...p.batchShape, p.L, p.S],
              leadingBroadcastStrides(p.attnMask.shape, p.attnMask.strides, [
                ...p.batchShape,
                p.L,
                p.S,
              ]),
            ),
          )
        : 0n;
      handleOf(p.query).helper.sdpa(
        dtypeCode(p.dtype),
        [
          take(gatherBatched(p.query, p.batchShape)),
          take(gatherBatched(p.key, kvLead)),
          take(gatherBatched(p.value, kvLead)),
        ],
        mask,
        maskKind,
        handleOf(out).id,
        shape,
        p.scale,
      );
    }),
  );
}

export const sdpaKernel: KernelDefinition<SdpaParams> = {
  op: "scaledDotProductAttention",
  name: "mps-sdpa",
  device: "mps",
  family: "MATH",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  priority: 100,
  supports: (p) => {
    if (p.dropoutP > 0) return "dropout is not implemented on mps (dropoutP must be 0)";
    const d = dtypeSupport(p.dtype);
    if (d !== true) return d;
    if (p.batchShape.length + 2 > 8)
      return `attention with ${p.batchShape.length} batch dims; the mps kernels take at most 6`;
    for (const [name, t] of [
      ["query", p.query],
      ["key", p.key],
      ["value", p.value],
    ] as const) {
      const ok = layoutSupport(name, t.rank, t.strides);
      if (ok !== true) return ok;
    }
    return true;
  },
  run,
};
