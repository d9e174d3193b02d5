import type { Harness } from "../harness.ts";
import conv2d from "./conv2d.ts";
import dispatch from "./dispatch.ts";
import einsum from "./einsum.ts";
import gemm from "./gemm.ts";
import sdpa from "./sdpa.ts";

export interface Suite {
  description: string;
  run(h: Harness, args: string[]): Promise<void>;
}

export const SUITES: Record<string, Suite> = { conv2d, dispatch, einsum, gemm, sdpa };
