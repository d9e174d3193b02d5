import type { Harness } from "../harness.ts";
import dispatch from "./dispatch.ts";

export interface Suite {
  description: string;
  run(h: Harness, args: string[]): Promise<void>;
}

export const SUITES: Record<string, Suite> = { dispatch };
