/**
 * Regenerates src/native/status-names.ts from the installed CUDA headers:
 *   npx tsx packages/backend-cuda/scripts/gen-status-names.ts [/usr/local/cuda/include]
 * The header test checks the committed tables against the headers, so a new toolkit that
 * adds codes shows up as a failing test that names this script.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { enumerators } from "@backplane/testkit/c-header";

const inc = process.argv[2] ?? "/usr/local/cuda/include";
const cu = enumerators(readFileSync(`${inc}/cuda.h`, "utf8"), "CUresult");
const rt = enumerators(readFileSync(`${inc}/driver_types.h`, "utf8"), "cudaError");
const version = /#define CUDA_VERSION (\d+)/.exec(readFileSync(`${inc}/cuda.h`, "utf8"))![1];

const table = (m: Map<string, number>) =>
  [...m].map(([name, v]) => `  ${v}: "${name}",`).join("\n");

const out = `/**
 * Names of every CUresult (cuda.h, enum cudaError_enum) and every cudaError_t
 * (driver_types.h, enum cudaError), generated from the CUDA ${version} headers by
 * scripts/gen-status-names.ts. test/headers.test.ts checks them against the installed headers.
 */

/** CUresult value -> name, e.g. 2 -> "CUDA_ERROR_OUT_OF_MEMORY". */
export const CU_RESULT_NAMES: Readonly<Record<number, string>> = {
${table(cu)}
};

/** cudaError_t value -> name, e.g. 35 -> "cudaErrorInsufficientDriver". */
export const CUDART_ERROR_NAMES: Readonly<Record<number, string>> = {
${table(rt)}
};
`;
writeFileSync(new URL("../src/native/status-names.ts", import.meta.url), out);
console.log(`wrote ${cu.size} CUresult and ${rt.size} cudaError_t names (CUDA ${version})`);
