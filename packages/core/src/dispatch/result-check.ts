/**
 * Checks a kernel's result against what its op promises (OpDefinition.result): a Tensor of
 * the promised shape and dtype, on the inputs' device type, and not one of the inputs
 * themselves unless the kernel declares inPlace. Runs under core.checkKernels or
 * core.strict, and in the testkit always.
 */
import { KernelContractError } from "../errors.ts";
import type { Kernel, OpParams, OpRecord, ResultSpec } from "../registry/kernels.ts";
import { Tensor } from "../tensor/tensor.ts";

const isSpec = (x: unknown): x is ResultSpec =>
  typeof x === "object" && x !== null && Array.isArray((x as ResultSpec).shape);

export function checkResult(op: OpRecord, k: Kernel, params: OpParams, out: unknown): void {
  const promise = op.result?.(params);
  if (promise === undefined) return;
  const fail = (problem: string) => new KernelContractError(op.name, k.name, k.backend, problem);
  const inputs = Object.values(params).filter((v): v is Tensor => v instanceof Tensor);
  const one = (name: string, got: unknown, want: ResultSpec) => {
    const what = name ? `result ${name}` : "result";
    if (!(got instanceof Tensor))
      throw fail(
        `returned ${got === undefined ? "undefined" : typeof got} as its ${what}, not a Tensor`,
      );
    if (got.shape.length !== want.shape.length || got.shape.some((d, i) => d !== want.shape[i]))
      throw fail(`returned a ${what} of shape [${got.shape}]; the op promises [${want.shape}]`);
    if (got.dtype !== want.dtype)
      throw fail(`returned a ${what} of dtype ${got.dtype}; the op promises ${want.dtype}`);
    if (got.deviceType !== params.deviceType)
      throw fail(`returned a ${what} on ${got.device}; the inputs are on ${params.deviceType}`);
    if (!k.inPlace && inputs.some((t) => t === got || t.storage === got.storage))
      throw fail(
        `returned one of its inputs as its ${what} (declare inPlace if it writes in place)`,
      );
  };
  if (isSpec(promise)) {
    one("", out, promise);
    return;
  }
  for (const [name, want] of Object.entries(promise))
    one(name, (out as Record<string, unknown>)?.[name], want);
}
