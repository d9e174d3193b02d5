/** Validation of library specs and declarations: a bad one is a programmer error (ArgumentError). */
import { ArgumentError } from "../../errors.ts";
import type { FfiType, LibraryDecl, LibrarySpec, WideIntType } from "./types.ts";

/** Every valid {@link FfiType}. */
export const FFI_TYPES: readonly FfiType[] = [
  "void",
  "bool",
  "i8",
  "u8",
  "i16",
  "u16",
  "i32",
  "u32",
  "i64",
  "u64",
  "f32",
  "f64",
  "usize",
  "pointer",
  "buffer",
  "cstring",
];

const TYPE_SET: ReadonlySet<string> = new Set(FFI_TYPES);

export function isWideInt(t: FfiType): t is WideIntType {
  return t === "i64" || t === "u64" || t === "usize";
}

const SYMBOL_NAME = /^[A-Za-z_$][A-Za-z0-9_$@.?]*$/;

function describe(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v;
}

/**
 * Checks a declaration and returns it unchanged (typed with literal tuples thanks to `const`).
 * Throws ArgumentError naming the first problem.
 */
export function defineLibrary<const D extends LibraryDecl>(decl: D): D {
  validateDeclaration(decl);
  return decl;
}

/**
 * One function of a declaration that returns a status code (an i32: CUresult,
 * dnnl_status_t, cudnnStatus_t...). (Helpers with the return type fixed, not defaulted:
 * inside defineLibrary's argument a default would be inferred from the context.)
 */
export function ffiStatus<const A extends readonly FfiType[]>(
  args: A,
): { args: A; returns: "i32"; optional: false } {
  return { args, returns: "i32", optional: false };
}

/** A status-returning function that older versions of the library may lack (bound as null). */
export function ffiOptionalStatus<const A extends readonly FfiType[]>(
  args: A,
): { args: A; returns: "i32"; optional: true } {
  return { args, returns: "i32", optional: true };
}

/** One function of a declaration with another return type. */
export function ffiCall<const A extends readonly FfiType[], const R extends FfiType>(
  args: A,
  returns: R,
): { args: A; returns: R; optional: false } {
  return { args, returns, optional: false };
}

/** Throws ArgumentError unless `decl` is a well-formed {@link LibraryDecl}. */
export function validateDeclaration(decl: unknown): asserts decl is LibraryDecl {
  if (decl === null || typeof decl !== "object" || Array.isArray(decl)) {
    throw new ArgumentError(`FFI declaration must be an object of symbols, got ${describe(decl)}`);
  }
  const names = Object.keys(decl);
  if (names.length === 0) {
    throw new ArgumentError("FFI declaration is empty: declare at least one symbol");
  }
  for (const name of names) {
    if (!SYMBOL_NAME.test(name)) {
      throw new ArgumentError(`FFI declaration: ${JSON.stringify(name)} is not a C symbol name`);
    }
    const s = (decl as Record<string, unknown>)[name];
    if (s === null || typeof s !== "object" || Array.isArray(s)) {
      throw new ArgumentError(
        `FFI declaration of ${name} must be { args, returns }, got ${describe(s)}`,
      );
    }
    const { args, returns, optional } = s as Record<string, unknown>;
    if (!Array.isArray(args)) {
      throw new ArgumentError(`FFI declaration of ${name}: args must be an array of FFI types`);
    }
    args.forEach((a, i) => {
      if (typeof a !== "string" || !TYPE_SET.has(a)) {
        throw new ArgumentError(
          `FFI declaration of ${name}: argument ${i} has unknown type ${describe(a)} ` +
            `(expected one of ${FFI_TYPES.join(", ")})`,
        );
      }
      if (a === "void") {
        throw new ArgumentError(`FFI declaration of ${name}: argument ${i} cannot be void`);
      }
    });
    if (typeof returns !== "string" || !TYPE_SET.has(returns)) {
      throw new ArgumentError(
        `FFI declaration of ${name}: unknown return type ${describe(returns)} ` +
          `(expected one of ${FFI_TYPES.join(", ")})`,
      );
    }
    if (returns === "buffer") {
      throw new ArgumentError(
        `FFI declaration of ${name}: "buffer" is an argument type; return "pointer" instead`,
      );
    }
    if (optional !== undefined && typeof optional !== "boolean") {
      throw new ArgumentError(`FFI declaration of ${name}: optional must be a boolean`);
    }
  }
}

/** Throws ArgumentError unless `spec` is a well-formed {@link LibrarySpec}. */
export function validateSpec(spec: unknown): asserts spec is LibrarySpec {
  if (spec === null || typeof spec !== "object") {
    throw new ArgumentError(`library spec must be an object, got ${describe(spec)}`);
  }
  const { name, candidates, versions, env, pip } = spec as Record<string, unknown>;
  if (typeof name !== "string" || name === "") {
    throw new ArgumentError("library spec: name must be a non-empty string");
  }
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string" && x);
  if (!strings(candidates)) {
    throw new ArgumentError(
      `library spec ${name}: candidates must be an array of non-empty strings`,
    );
  }
  if (versions !== undefined && !strings(versions)) {
    throw new ArgumentError(`library spec ${name}: versions must be an array of non-empty strings`);
  }
  if (pip !== undefined && !strings(pip)) {
    throw new ArgumentError(`library spec ${name}: pip must be an array of non-empty strings`);
  }
  if (env !== undefined && (typeof env !== "string" || env === "")) {
    throw new ArgumentError(`library spec ${name}: env must be a non-empty string`);
  }
}
