/**
 * npm run bench -- <suite> [--json]: the suites of @backplane/bench, run
 * from source. `backplane bench` runs the same code from the built package.
 */
import { host } from "@backplane/core/cpu";
import { runBench } from "./index.ts";

const args: string[] = host.Deno?.args ?? process.argv.slice(2);
process.exitCode = await runBench(args);
