/**
 * PyTorch's PYTORCH_ENABLE_MPS_FALLBACK: with mps.fallback on, an op no mps kernel takes
 * runs on the CPU instead of raising. Every op gets one lowest-priority "mps-cpu-fallback"
 * kernel on device mps that copies the inputs' storages to the CPU (keeping their views),
 * dispatches the same params there, and copies the results back, warning once per op.
 */
import { Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  allocateStorage,
  dispatch,
  getOp,
  type OpParams,
  warnOnce,
} from "@backplane/core/backend";

export const FALLBACK_FLAG = "mps.fallback";
// Bumped by resetFallbackWarnings(): each op warns once per generation.
let warningGeneration = 0;

/** Makes every op warn again on its next fallback (tests; a long-lived app after a change). */
export function resetFallbackWarnings(): void {
  warningGeneration++;
}

const DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"] as const;

/** The same view of a copy of `t`'s whole storage on the CPU. */
function storageToCpu(t: Tensor): Tensor {
  const s = t.storage;
  const bytes = s.memory.downloadSync!(s.handle, 0, s.byteLength);
  const cpu = allocateStorage("cpu", s.byteLength);
  cpu.memory.upload(cpu.handle, 0, bytes);
  return new Tensor(cpu, t.dtype, t.shape, t.strides, t.offset);
}

function mapTensors(value: unknown, f: (t: Tensor) => Tensor): unknown {
  if (value instanceof Tensor) return f(value);
  if (Array.isArray(value)) return value.map((v) => mapTensors(v, f));
  return value;
}

function mapResult(value: unknown, f: (t: Tensor) => Tensor): unknown {
  if (value instanceof Tensor || Array.isArray(value)) return mapTensors(value, f);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapTensors(v, f)]));
  return value;
}

function runOnCpu(opName: string, p: OpParams): unknown {
  const op = getOp(opName)!;
  const made: Tensor[] = [];
  let device = "mps";
  const toCpu = (t: Tensor) => {
    if (t.deviceType !== "mps") return t;
    device = t.device;
    const c = storageToCpu(t);
    made.push(c);
    return c;
  };
  const params = Object.fromEntries(
    Object.entries(p).map(([k, v]) => [k, mapTensors(v, toCpu)]),
  ) as unknown as OpParams;
  warnOnce(
    `mps-fallback:${warningGeneration}:${opName}`,
    `${opName} has no mps kernel for these inputs; it runs on the CPU (mps.fallback is on)`,
  );
  try {
    const result = dispatch(op, { ...params, deviceType: "cpu" });
    return mapResult(result, (t) => {
      const back = t.to(device);
      t.dispose();
      return back;
    });
  } finally {
    for (const t of made) t.dispose();
  }
}

/** One fallback kernel per op name. */
export function fallbackKernels(ops: readonly string[]): AnyKernelDefinition[] {
  return ops.map(
    (op) =>
      ({
        op,
        name: "mps-cpu-fallback",
        device: "mps",
        dtypes: DTYPES,
        deterministic: true,
        priority: -100,
        enabled: (flag) =>
          flag(FALLBACK_FLAG) === true
            ? true
            : `${FALLBACK_FLAG} is off (set backends.mps.fallback = true or PYTORCH_ENABLE_MPS_FALLBACK=1 to run such ops on the CPU)`,
        run: (p: OpParams) => runOnCpu(op, p),
      }) as AnyKernelDefinition,
  );
}
