import type { Harness } from "../harness.ts";
import dispatch from "./dispatch.ts";
import gemm from "./gemm.ts";

export interface Suite {
  description: string;
  run(h: Harness, args: string[]): Promise<void>;
}

export const SUITES: Record<string, Suite> = { dispatch, gemm };
