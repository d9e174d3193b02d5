/**
 * Every FFI declaration the installed CUDA headers cover, checked against the C prototype:
 * the bound symbol is the one cuda.h's #define maps the API name to (cuMemAlloc ->
 * cuMemAlloc_v2, cuCtxCreate -> cuCtxCreate_v4...), the argument count matches, each
 * argument and the result have the FFI type of their C size class (pointers 64-bit,
 * CUdeviceptr u64, size_t usize, enums 4-byte ints). Also every constant and the CUresult /
 * cudaError_t name tables against their enums, and cudaDataType_t / libraryPropertyType
 * values of the library table against library_types.h.
 */
import { existsSync, readFileSync } from "node:fs";
import {
  classify,
  declarationProblems,
  enumerators,
  enumValue,
  functionRenames,
  typedefs,
} from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import { CU, CUDART, CUDART_DECL, DRIVER_DECL } from "../src/native/driver-api.ts";
import { LIBRARY_ENUMS } from "../src/native/library-api.ts";
import { CU_RESULT_NAMES, CUDART_ERROR_NAMES } from "../src/native/status-names.ts";

const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env;
const INCLUDE = env?.BACKPLANE_CUDA_INCLUDE ?? "/usr/local/cuda/include";
const have = existsSync(`${INCLUDE}/cuda.h`) && existsSync(`${INCLUDE}/cuda_runtime_api.h`);
const itHeaders = have ? it : it.skip;
const skipNote = have
  ? ""
  : ` (skipped: no CUDA headers in ${INCLUDE}; set BACKPLANE_CUDA_INCLUDE)`;

const read = (f: string) => (have ? readFileSync(`${INCLUDE}/${f}`, "utf8") : "");
const cudaH = read("cuda.h");
const runtimeH = read("cuda_runtime_api.h");
const driverTypesH = read("driver_types.h");
const libraryTypesH = read("library_types.h");

describe(`FFI declarations against the installed CUDA headers${skipNote}`, () => {
  itHeaders(
    "every libcuda declaration matches cuda.h (versioned symbols, arity, size classes)",
    () => {
      const renames = functionRenames(cudaH);
      const defs = typedefs(cudaH);
      const problems = Object.entries(DRIVER_DECL).flatMap(([name, d]) =>
        declarationProblems(cudaH, defs, name, d, { renames }),
      );
      expect(problems).toEqual([]);
    },
  );

  itHeaders("the versioned names are the ones cuda.h maps to", () => {
    const renames = functionRenames(cudaH);
    expect(renames.get("cuMemAlloc")).toBe("cuMemAlloc_v2");
    expect(renames.get("cuCtxCreate")).toBe("cuCtxCreate_v4");
    expect(renames.get("cuMemcpyHtoDAsync")).toBe("cuMemcpyHtoDAsync_v2");
    for (const [api, symbol] of renames) {
      // Any API the package binds under its plain name must not be renamed by the header.
      expect(Object.keys(DRIVER_DECL).includes(api), `${api} is #defined to ${symbol}`).toBe(false);
    }
    // And everything bound under a versioned name is a current mapping.
    for (const name of Object.keys(DRIVER_DECL).filter((n) => /_v\d$/.test(n))) {
      expect([...renames.values()], name).toContain(name);
    }
  });

  itHeaders("every libcudart declaration matches cuda_runtime_api.h", () => {
    const defs = typedefs(`${driverTypesH}\n${runtimeH}`);
    const problems = Object.entries(CUDART_DECL).flatMap(([name, d]) =>
      declarationProblems(runtimeH, defs, name, d, { renames: functionRenames(runtimeH) }),
    );
    expect(problems).toEqual([]);
  });

  itHeaders("CUdeviceptr is 64-bit and handles are struct pointers", () => {
    const defs = typedefs(cudaH);
    expect(classify("CUdeviceptr", defs)).toBe("u64");
    for (const h of ["CUcontext", "CUstream", "CUmodule", "CUfunction", "CUevent"])
      expect(classify(h, defs), h).toBe("pointer");
    expect(classify("CUdevice", defs)).toBe("i32");
    expect(classify("CUresult", defs)).toBe("enum");
  });

  itHeaders("every constant equals its cuda.h / driver_types.h enumerator", () => {
    for (const [name, value] of Object.entries(CU))
      expect(enumValue(cudaH, name), name).toBe(value);
    for (const [name, value] of Object.entries(CUDART))
      expect(enumValue(driverTypesH, name), name).toBe(value);
  });

  itHeaders("the CUresult and cudaError_t name tables are the headers' enums", () => {
    const cu = enumerators(cudaH, "CUresult");
    expect(cu.size).toBeGreaterThan(90);
    expect(Object.fromEntries([...cu].map(([n, v]) => [v, n]))).toEqual(CU_RESULT_NAMES);
    const rt = enumerators(driverTypesH, "cudaError");
    expect(Object.fromEntries([...rt].map(([n, v]) => [v, n]))).toEqual(CUDART_ERROR_NAMES);
    expect(CUDART_ERROR_NAMES[35]).toBe("cudaErrorInsufficientDriver");
    expect(CU_RESULT_NAMES[2]).toBe("CUDA_ERROR_OUT_OF_MEMORY");
  });

  itHeaders(
    "cudaDataType_t and libraryPropertyType values of the library table match library_types.h",
    () => {
      const dataTypes = enumerators(libraryTypesH, "cudaDataType");
      for (const name of [
        "CUDA_R_32F",
        "CUDA_R_64F",
        "CUDA_R_16F",
        "CUDA_R_16BF",
        "CUDA_C_32F",
        "CUDA_C_64F",
      ] as const) {
        expect(dataTypes.get(name), name).toBe(LIBRARY_ENUMS[name]);
      }
      const props = enumerators(libraryTypesH, "libraryPropertyType");
      for (const name of ["MAJOR_VERSION", "MINOR_VERSION", "PATCH_LEVEL"] as const)
        expect(props.get(name), name).toBe(LIBRARY_ENUMS[name]);
    },
  );
});
