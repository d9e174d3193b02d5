/**
 * Just enough of a C header reader to check FFI declarations against a library's headers
 * (NVIDIA's CUDA, cuBLAS, cuDNN...): #define renames (cuMemAlloc -> cuMemAlloc_v2),
 * enumerators, typedefs, prototypes, and the size class of a C type. A backend's tests use
 * it to prove each declaration matches the installed header: `@backplane/testkit/c-header`.
 */

const stripped = new Map<string, string>();

/** Removes comments, keeping line structure (so #directives stay on their lines). Memoised. */
export function stripComments(text: string): string {
  let out = stripped.get(text);
  if (out === undefined) {
    out = text
      .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, " "))
      .replace(/\/\/[^\n]*/g, "");
    stripped.set(text, out);
  }
  return out;
}

/**
 * `#define NAME TARGET` renames of function names, with __CUDA_API_PTDS(X)/PTSZ(X) read as X
 * (the default build, without per-thread default streams). The first definition wins.
 */
export function functionRenames(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re =
    /^[ \t]*#define[ \t]+([A-Za-z_]\w*)[ \t]+(?:__CUDA_API_PT(?:DS|SZ)\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))[ \t]*$/gm;
  for (const m of text.matchAll(re)) {
    const target = m[2] ?? m[3]!;
    if (m[1] !== target && !out.has(m[1]!)) out.set(m[1]!, target);
  }
  return out;
}

/** Enumerators of one enum, by the typedef name or the enum tag; values resolved in order. */
export function enumerators(text: string, name: string): Map<string, number> {
  const src = stripComments(text);
  const patterns = [
    new RegExp(`typedef\\s+enum\\s*\\w*\\s*\\{([^}]*)\\}\\s*${name}\\s*;`),
    new RegExp(`enum\\s+(?:__device_builtin__\\s+)?${name}\\s*\\{([^}]*)\\}`),
  ];
  const body = patterns.map((p) => p.exec(src)?.[1]).find((b) => b !== undefined);
  if (body === undefined) throw new Error(`enum ${name} not found`);
  const out = new Map<string, number>();
  let next = 0;
  const lines = body.split("\n");
  let skipping = 0;
  for (const raw of lines) {
    const line = raw.trim();
    // Enumerators inside #if blocks that are internal-only (e.g. ..._MAX) are skipped.
    if (/^#\s*if/.test(line)) {
      if (skipping > 0 || /__CUDA_API_VERSION_INTERNAL/.test(line)) skipping++;
      continue;
    }
    if (/^#\s*endif/.test(line)) {
      if (skipping > 0) skipping--;
      continue;
    }
    if (line.startsWith("#") || skipping > 0) continue;
    for (const raw of line.split(",")) {
      // An attribute macro after the name (cuDNN's CUDNN_DEPRECATED_ENUM) is not part of it.
      const part = raw.replace(/^(\s*[A-Za-z_]\w*)\s+[A-Z_]*DEPRECATED[A-Z_]*\b/, "$1");
      const m = /^\s*([A-Za-z_]\w*)\s*(?:=\s*(.+?))?\s*$/.exec(part);
      if (!m) continue;
      const value = m[2] === undefined ? next : evaluate(m[2], out);
      out.set(m[1]!, value);
      next = value + 1;
    }
  }
  return out;
}

function evaluate(expr: string, known: Map<string, number>): number {
  const e = expr.trim().replace(/\b(\d+)[uUlL]+\b/g, "$1");
  if (/^-?\d+$/.test(e)) return Number(e);
  if (/^0x[0-9a-f]+$/i.test(e)) return Number.parseInt(e, 16);
  if (known.has(e)) return known.get(e)!;
  const shift = /^\(?\s*(\d+|0x[0-9a-f]+)\s*<<\s*(\d+)\s*\)?$/i.exec(e);
  if (shift) return Number(shift[1]) * 2 ** Number(shift[2]);
  throw new Error(`cannot evaluate enumerator value ${JSON.stringify(expr)}`);
}

/** A value of any enumerator in the header (first definition). */
export function enumValue(text: string, name: string): number | undefined {
  const m = new RegExp(`\\b${name}\\s*=\\s*([^,\\n}]+)`).exec(stripComments(text));
  return m ? evaluate(m[1]!, new Map()) : undefined;
}

export interface Prototype {
  name: string;
  returns: string;
  params: { type: string; name: string }[];
}

const DECORATIONS =
  /\b(?:extern|__host__|__device__|__cudart_builtin__|CUDARTAPI|CUDAAPI|CUBLASWINAPI|CUBLASAPI|CUFFTAPI|CUSOLVERAPI|CUSPARSEAPI|CUSPARSELT_API|CUDNNWINAPI|CUDNN_DEPRECATED|__CUDA_DEPRECATED|CUDART_CB|CUDA_CB|__device_builtin__|inline|static)\b/g;

const indexes = new Map<string, Map<string, Prototype>>();

/** Every function declaration of a header, by name (first declaration wins). */
function prototypeIndex(text: string): Map<string, Prototype> {
  let index = indexes.get(text);
  if (index) return index;
  index = new Map();
  const src = stripComments(text)
    .split("\n")
    .map((l) => (/^\s*#/.test(l) ? "" : l))
    .join("\n");
  for (const raw of src.split(";")) {
    // The statement after the last brace (struct bodies, extern "C" {...) are not declarations).
    const stmt = raw
      .slice(Math.max(raw.lastIndexOf("{"), raw.lastIndexOf("}")) + 1)
      .replace(/\s+/g, " ")
      .trim();
    const m = /^(.*?)\b([A-Za-z_]\w*)\s*\((.*)\)$/.exec(stmt);
    if (!m || (m[3]!.includes("(") && !m[3]!.includes("__dv("))) continue;
    const name = m[2]!;
    if (index.has(name)) continue;
    const returns = m[1]!.replace(DECORATIONS, " ").replace(/\s+/g, " ").trim();
    if (returns === "" || /[=(),]/.test(returns) || /^typedef\b/.test(returns)) continue;
    const list = m[3]!.replace(/__dv\([^)]*\)/g, "").trim();
    const params =
      list === "" || list === "void"
        ? []
        : splitParams(list).map((p) => {
            const t = p.replace(/\s+/g, " ").trim();
            const arr = /\[\s*\w*\s*\]$/.test(t);
            const base = t.replace(/\s*\[\s*\w*\s*\]$/, "");
            const pm = /^(.*?)([A-Za-z_]\w*)$/.exec(base);
            // A parameter without a name is all type.
            const isTypeOnly = !pm || pm[1]!.trim() === "";
            const type = isTypeOnly ? base : pm![1]!.trim();
            return { type: arr ? `${type} *` : type, name: isTypeOnly ? "" : pm![2]! };
          });
    index.set(name, { name, returns, params });
  }
  indexes.set(text, index);
  return index;
}

/**
 * The first declaration `RET NAME(PARAMS);` in the header (the header's current API; legacy
 * prototypes of internal builds come later in NVIDIA's headers).
 */
export function prototype(text: string, name: string): Prototype | undefined {
  return prototypeIndex(text).get(name);
}

function splitParams(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of list) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/** `typedef A B;` aliases, struct-pointer handles and enum typedefs of a header. */
export function typedefs(text: string): Map<string, string> {
  const src = stripComments(text);
  const out = new Map<string, string>();
  for (const m of src.matchAll(/typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;/g)) {
    if (!out.has(m[1]!)) out.set(m[1]!, "enum");
  }
  for (const m of src.matchAll(/typedef\s+struct\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;/g)) {
    if (!out.has(m[1]!)) out.set(m[1]!, "struct");
  }
  for (const m of src.matchAll(/typedef\s+([^;{}()]+?)\s*\b(\w+)\s*;/g)) {
    const lhs = m[1]!.replace(/\s+/g, " ").trim();
    if (out.has(m[2]!) || lhs.startsWith("struct {")) continue;
    if (/^enum\b/.test(lhs) && !lhs.includes("*")) out.set(m[2]!, "enum");
    else out.set(m[2]!, lhs);
  }
  return out;
}

/** Size classes of C types: what an FFI declaration must use for them. */
export type CClass =
  | "void"
  | "i8"
  | "u8"
  | "i16"
  | "u16"
  | "i32"
  | "u32"
  | "i64"
  | "u64"
  | "f32"
  | "f64"
  | "size"
  | "enum"
  | "pointer"
  | "struct";

const BASE: Record<string, CClass> = {
  void: "void",
  char: "i8",
  "signed char": "i8",
  "unsigned char": "u8",
  short: "i16",
  "unsigned short": "u16",
  int: "i32",
  "signed int": "i32",
  unsigned: "u32",
  "unsigned int": "u32",
  long: "i64", // LP64
  "unsigned long": "u64",
  "long long": "i64",
  "long long int": "i64",
  "unsigned long long": "u64",
  "unsigned long long int": "u64",
  float: "f32",
  double: "f64",
  size_t: "size",
  int8_t: "i8",
  uint8_t: "u8",
  int16_t: "i16",
  uint16_t: "u16",
  int32_t: "i32",
  uint32_t: "u32",
  int64_t: "i64",
  uint64_t: "u64",
  cuuint32_t: "u32",
  cuuint64_t: "u64",
};

/** The class of a C type, resolving typedefs (enums are 4-byte ints on every ABI CUDA supports). */
export function classify(type: string, defs: Map<string, string>, depth = 0): CClass {
  if (depth > 20) throw new Error(`typedef loop at ${type}`);
  let t = type
    .replace(DECORATIONS, " ")
    .replace(/\b(const|volatile|struct|union)\b/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (t.endsWith("*")) return "pointer";
  t = t.replace(/\s*\*\s*$/, "");
  if (/^enum\b/.test(t)) return "enum";
  if (t in BASE) return BASE[t]!;
  const def = defs.get(t);
  if (def === undefined) throw new Error(`unknown C type ${JSON.stringify(type)}`);
  if (def === "enum") return "enum";
  if (def === "struct") return "struct";
  return classify(def, defs, depth + 1);
}

/** FFI types an argument of each class may be declared with (pointers: any 64-bit pointer form). */
export const ACCEPTS: Record<CClass, readonly string[]> = {
  void: ["void"],
  i8: ["i8"],
  u8: ["u8"],
  i16: ["i16"],
  u16: ["u16"],
  i32: ["i32"],
  u32: ["u32"],
  i64: ["i64"],
  u64: ["u64"],
  f32: ["f32"],
  f64: ["f64"],
  size: ["usize"],
  enum: ["i32", "u32"],
  pointer: ["pointer", "buffer", "usize", "cstring"],
  struct: [],
};

/**
 * For pointer types: "explicit" when the parameter is written `T *` (a host out-parameter or
 * buffer in the driver API), "handle" when a typedef hides the pointer (CUstream, CUcontext:
 * opaque handles this package carries as addresses).
 */
export function pointerKind(
  type: string,
  defs: Map<string, string>,
): "explicit" | "handle" | undefined {
  if (classify(type, defs) !== "pointer") return undefined;
  return type.replace(DECORATIONS, " ").trim().endsWith("*") ? "explicit" : "handle";
}

/** An FFI declaration as checked here: the FFI type of each argument and of the result. */
export interface CheckedDecl {
  readonly args: readonly string[];
  readonly returns: string;
}

/**
 * What is wrong with one FFI declaration against the header's prototype (empty: nothing).
 * `symbol` is the exported name bound; `opts.renames` are the header's `#define API symbol`
 * (cuMemAlloc -> cuMemAlloc_v2, cublasCreate -> cublasCreate_v2), so a symbol bound under
 * its API name that the header renames is caught, and a versioned symbol is checked against
 * its API's prototype. Checks: argument count, the size class of every argument and of the
 * result, opaque handles carried as usize, explicit host pointers not as usize (see
 * CheckOptions), cstrings.
 */
export interface CheckOptions {
  /** The header's `#define API symbol` renames (functionRenames of the header that has them). */
  renames?: Map<string, string>;
  /**
   * True (default) where a `T *` parameter is always host memory (the driver API, whose device
   * pointers are CUdeviceptr): it must then not be declared usize. False for libraries whose
   * `void *` may be a device pointer, carried as an address.
   */
  explicitPointersAreHost?: boolean;
}

export function declarationProblems(
  header: string,
  defs: Map<string, string>,
  symbol: string,
  decl: CheckedDecl,
  opts: CheckOptions = {},
): string[] {
  const renames = opts.renames ?? new Map<string, string>();
  const problems: string[] = [];
  // The API name whose #define produces this symbol (or the symbol itself).
  const apiName = [...renames].find(([, target]) => target === symbol)?.[0] ?? symbol;
  const mapped = renames.get(symbol);
  if (mapped) problems.push(`${symbol}: the header maps ${symbol} to ${mapped}; bind ${mapped}`);
  // cuda.h declares the API name (#defined to the symbol); cublas_api.h declares the symbol.
  const proto = prototype(header, apiName) ?? prototype(header, symbol);
  if (!proto) return [...problems, `${symbol}: no prototype for ${apiName} in the header`];
  if (proto.params.length !== decl.args.length)
    problems.push(
      `${symbol}: ${decl.args.length} arguments declared, the prototype has ${proto.params.length} (${proto.params.map((p) => p.type).join(", ")})`,
    );
  proto.params.forEach((p, i) => {
    const t = decl.args[i];
    if (t === undefined) return;
    let cls: CClass;
    try {
      cls = classify(p.type, defs);
    } catch (err) {
      problems.push(`${symbol}: ${(err as Error).message}`);
      return;
    }
    if (!ACCEPTS[cls].includes(t))
      problems.push(`${symbol}: argument ${i} (${p.type} ${p.name}) is ${cls}, declared ${t}`);
    const kind = pointerKind(p.type, defs);
    if (kind === "handle" && t !== "usize")
      problems.push(`${symbol}: argument ${i} (${p.type}) is an opaque handle: declare it usize`);
    if (kind === "explicit" && t === "usize" && opts.explicitPointersAreHost !== false)
      problems.push(`${symbol}: argument ${i} (${p.type}) is a host pointer: declare it buffer`);
    if (t === "cstring" && !/char\s*\*$/.test(p.type.replace(/const\s+/g, "").trim()))
      problems.push(`${symbol}: argument ${i} is declared cstring but is ${p.type}`);
  });
  const rc = classify(proto.returns, defs);
  const returnOk =
    decl.returns === "cstring"
      ? /char\s*\*$/.test(proto.returns)
      : ACCEPTS[rc].filter((x) => x !== "buffer").includes(decl.returns);
  if (!returnOk)
    problems.push(`${symbol}: returns ${proto.returns} (${rc}), declared ${decl.returns}`);
  return problems;
}
