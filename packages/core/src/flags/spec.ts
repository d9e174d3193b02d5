/**
 * Flag schemas: one typed description per flag (bool, int, enum, string), from which
 * come the TypeScript types, the default, the environment initialisation and the
 * runtime validation.
 */
import { FlagError } from "../errors.ts";
import { show } from "../util/format.ts";

interface SpecBase<T> {
  readonly default: T;
  /**
   * Environment variables that initialise the flag, first set one wins (as torch reads
   * TORCH_*, oneDNN reads ONEDNN_VERBOSE or DNNL_VERBOSE). Read once, when the flag is defined.
   */
  readonly env?: string | readonly string[];
  /**
   * The packages whose code reads this flag ("@backplane/core" for the dispatcher). A flag
   * whose readers are all absent is inert: setting it warns once, describe() says so.
   */
  readonly readBy?: readonly string[];
  readonly doc?: string;
  /** Name of the torch attribute this flag mirrors, for the mapping table. */
  readonly torch?: string;
  /** Custom reading of `env` (torch's TORCH_BLAS_PREFER_CUBLASLT=1 means "cublaslt"). */
  readonly fromEnv?: (text: string) => T;
}
export interface BoolSpec extends SpecBase<boolean> {
  readonly kind: "bool";
}
export interface IntSpec extends SpecBase<number> {
  readonly kind: "int";
  readonly min?: number;
  readonly max?: number;
}
export interface EnumSpec<V extends string = string> extends SpecBase<V> {
  readonly kind: "enum";
  readonly values: readonly V[];
  /**
   * Values that become valid only when a package provides them (quantized engines):
   * `values` is what is always there, registerFlagChoice() adds the rest.
   */
  readonly extensible?: boolean;
}
export interface StringSpec extends SpecBase<string> {
  readonly kind: "string";
}
export type FlagSpec = BoolSpec | IntSpec | EnumSpec | StringSpec;

/** A namespace's schema: flags, possibly grouped (`cuda.matmul.allowTf32`). */
export interface FlagSchema {
  readonly [name: string]: FlagSpec | FlagSchema;
}

type Opts<T> = Omit<SpecBase<T>, "default">;
export const bool = (dflt: boolean, o: Opts<boolean> = {}): BoolSpec => ({
  kind: "bool",
  default: dflt,
  ...o,
});
export const int = (
  dflt: number,
  o: Opts<number> & { min?: number; max?: number } = {},
): IntSpec => ({
  kind: "int",
  default: dflt,
  ...o,
});
export const oneOf = <const V extends string>(
  values: readonly V[],
  dflt: V,
  o: Opts<V> & { extensible?: boolean } = {},
): EnumSpec<V> => ({
  kind: "enum",
  values,
  default: dflt,
  ...o,
});
export const str = (dflt: string, o: Opts<string> = {}): StringSpec => ({
  kind: "string",
  default: dflt,
  ...o,
});

/** The value type a schema describes: `{ benchmark: boolean; matmul: { allowTf32: boolean } }`. */
export type FlagValues<S> = S extends BoolSpec
  ? boolean
  : S extends IntSpec
    ? number
    : S extends EnumSpec<infer V>
      ? V
      : S extends StringSpec
        ? string
        : { -readonly [K in keyof S]: FlagValues<S[K]> };

export type DeepPartial<T> = T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

export function isSpec(x: FlagSpec | FlagSchema): x is FlagSpec {
  return typeof (x as FlagSpec).kind === "string" && "default" in x;
}

/** Walks a schema, yielding [dotted path, spec]. */
export function* leaves(schema: FlagSchema, prefix = ""): Generator<[string, FlagSpec]> {
  for (const [k, v] of Object.entries(schema)) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (isSpec(v)) yield [path, v];
    else yield* leaves(v, path);
  }
}

/** The variables a spec reads, in order. */
export function envNames(spec: FlagSpec): readonly string[] {
  return spec.env === undefined ? [] : typeof spec.env === "string" ? [spec.env] : spec.env;
}

/** What a flag accepts, in words: "a boolean", "an integer in [0, 2]", "one of ...". */
export function allowedText(spec: FlagSpec, extra: readonly string[] = []): string {
  switch (spec.kind) {
    case "bool":
      return "a boolean";
    case "int": {
      const lo = spec.min ?? Number.NEGATIVE_INFINITY;
      const hi = spec.max ?? Number.POSITIVE_INFINITY;
      return `an integer in [${lo}, ${hi}]`;
    }
    case "enum":
      return `one of ${[...spec.values, ...extra].map((v) => JSON.stringify(v)).join(", ")}`;
    case "string":
      return "a string";
  }
}

/** The TypeScript-ish type of a flag, for tables: boolean, integer, "a" | "b", string. */
export function typeText(spec: FlagSpec): string {
  switch (spec.kind) {
    case "bool":
      return "boolean";
    case "int":
      return `integer${spec.min !== undefined || spec.max !== undefined ? ` [${spec.min ?? "-inf"}, ${spec.max ?? "inf"}]` : ""}`;
    case "enum":
      return (
        spec.values.map((v) => JSON.stringify(v)).join(" | ") +
        (spec.extensible ? " | (provided)" : "")
      );
    case "string":
      return "string";
  }
}

/**
 * Checks a value against its spec; throws a FlagError that names the flag and what it
 * takes. `extra`: the values packages added to an extensible enum.
 */
export function validate(
  key: string,
  spec: FlagSpec,
  value: unknown,
  extra: readonly string[] = [],
): unknown {
  let ok: boolean;
  switch (spec.kind) {
    case "bool":
      ok = typeof value === "boolean";
      break;
    case "int":
      ok =
        typeof value === "number" &&
        Number.isInteger(value) &&
        value >= (spec.min ?? Number.NEGATIVE_INFINITY) &&
        value <= (spec.max ?? Number.POSITIVE_INFINITY);
      break;
    case "enum":
      ok =
        typeof value === "string" &&
        ((spec.values as readonly string[]).includes(value) || extra.includes(value));
      break;
    case "string":
      ok = typeof value === "string";
      break;
  }
  if (!ok) {
    throw new FlagError(`flag ${key} must be ${allowedText(spec, extra)}, got ${show(value)}`);
  }
  return value;
}

/** A spec's own reading of the environment; what it refuses names the variable and the flag. */
function customEnv(spec: FlagSpec, text: string, name: string, key: string): unknown {
  try {
    return (spec.fromEnv as (s: string) => unknown)(text.trim());
  } catch (e) {
    throw new FlagError(
      `environment ${name}=${JSON.stringify(text)} for flag ${key}: ${(e as Error)?.message ?? String(e)}`,
    );
  }
}

/** Parses environment variable `name`'s text for a flag; an unparsable value is an error. */
export function parseEnv(key: string, spec: FlagSpec, text: string, name = ""): unknown {
  const t = text.trim();
  const from = `${key} (from ${name})`;
  if (spec.fromEnv) return validate(from, spec, customEnv(spec, text, name, key));
  switch (spec.kind) {
    case "bool": {
      if (/^(1|true|on|yes)$/i.test(t)) return true;
      if (/^(0|false|off|no|)$/i.test(t)) return false;
      throw new FlagError(
        `environment ${name}=${JSON.stringify(text)} for flag ${key} is not a boolean (use 1 or 0)`,
      );
    }
    case "int":
      // Decimal digits only: Number() would also take "0x10", "1e3" and "2.0".
      return validate(from, spec, /^[+-]?\d+$/.test(t) ? Number(t) : t);
    case "enum": {
      const hit = spec.values.find((v) => v.toLowerCase() === t.toLowerCase());
      return validate(from, spec, hit ?? t);
    }
    case "string":
      return t;
  }
}

export { show } from "../util/format.ts";
