/**
 * Flag schemas: one typed description per flag (bool, int, enum, string), from which
 * come the TypeScript types, the default, the environment initialisation and the
 * runtime validation.
 */
import { FlagError } from "../errors.ts";
import { show } from "../format.ts";

interface SpecBase<T> {
  readonly default: T;
  /** Environment variable that initialises the flag when set (as torch reads TORCH_*). */
  readonly env?: string;
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
  o: Opts<V> = {},
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

function describe(spec: FlagSpec): string {
  switch (spec.kind) {
    case "bool":
      return "a boolean";
    case "int": {
      const lo = spec.min ?? Number.NEGATIVE_INFINITY;
      const hi = spec.max ?? Number.POSITIVE_INFINITY;
      return `an integer in [${lo}, ${hi}]`;
    }
    case "enum":
      return `one of ${spec.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "string":
      return "a string";
  }
}

/** Checks a value against its spec; throws a FlagError that names the flag and what it takes. */
export function validate(key: string, spec: FlagSpec, value: unknown): unknown {
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
      ok = typeof value === "string" && (spec.values as readonly string[]).includes(value);
      break;
    case "string":
      ok = typeof value === "string";
      break;
  }
  if (!ok) {
    throw new FlagError(`flag ${key} must be ${describe(spec)}, got ${show(value)}`);
  }
  return value;
}

/** Parses an environment variable's text for a flag; an unparsable value is an error. */
export function parseEnv(key: string, spec: FlagSpec, text: string): unknown {
  const t = text.trim();
  if (spec.fromEnv)
    return validate(`${key} (from ${spec.env})`, spec, (spec.fromEnv as (s: string) => unknown)(t));
  switch (spec.kind) {
    case "bool": {
      if (/^(1|true|on|yes)$/i.test(t)) return true;
      if (/^(0|false|off|no|)$/i.test(t)) return false;
      throw new FlagError(
        `environment ${spec.env}=${JSON.stringify(text)} for flag ${key} is not a boolean (use 1 or 0)`,
      );
    }
    case "int":
      return validate(`${key} (from ${spec.env})`, spec, Number(t));
    case "enum": {
      const hit = spec.values.find((v) => v.toLowerCase() === t.toLowerCase());
      return validate(`${key} (from ${spec.env})`, spec, hit ?? t);
    }
    case "string":
      return t;
  }
}

export { show } from "../format.ts";
