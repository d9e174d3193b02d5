/**
 * npm run bench -- <suite> [--json]: the suites of @backplane/bench (packages/bench), run
 * from source. `backplane bench` runs the same code from the built package.
 */
import { runBench } from "@backplane/bench";

const args: string[] = (globalThis as any).Deno?.args ?? process.argv.slice(2);
process.exitCode = await runBench(args);
