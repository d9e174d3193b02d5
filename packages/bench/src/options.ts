/**
 * The suites' own options (declared in suites/index.ts): read from the command line,
 * checked before a suite loads (an unknown option or a bad value is an OptionError, exit 2,
 * never a run that quietly ignores it), handed to the suite as `--name=value`, and printed
 * by `bench <suite> --help`.
 */
import type { SuiteOption } from "./suites/index.ts";

/** A bad option: runBench prints `bench <suite>: <message>` and returns 2. */
export class OptionError extends Error {}

/** One option as given: `--name=value`, `--name value`, or a switch `--name`. */
export interface GivenOption {
  name: string;
  value?: string;
}

/**
 * Reads `args` (the suite's name and --json taken out) against `declared`: which names exist
 * and which take a value. Values are checked by checkOption, per suite.
 */
export function readOptions(
  args: readonly string[],
  declared: readonly SuiteOption[],
): GivenOption[] {
  const byName = new Map(declared.map((o) => [o.name, o]));
  const out: GivenOption[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.indexOf("=");
    const name = eq < 0 ? a : a.slice(0, eq);
    const spec = byName.get(name);
    // --json is read before the suite's options (run.ts); with a value it is a mistake.
    if (name === "--json" && eq >= 0) throw new OptionError(`--json takes no value (got ${a})`);
    if (!a.startsWith("--") || !spec) {
      const known = [...byName.keys(), "--json"].join(", ");
      throw new OptionError(
        a.startsWith("-")
          ? `unknown option ${name} (options: ${known})`
          : `unexpected argument ${JSON.stringify(a)} (options: ${known})`,
      );
    }
    if (spec.value === undefined) {
      if (eq >= 0) throw new OptionError(`${name} takes no value (got ${a})`);
      out.push({ name });
    } else if (eq >= 0) out.push({ name, value: a.slice(eq + 1) });
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith("--"))
      out.push({ name, value: args[++i] });
    else out.push({ name, value: "" });
  }
  return out;
}

/** Throws an OptionError when `given`'s value is not what `spec` accepts. */
export function checkOption(given: GivenOption, spec: SuiteOption): void {
  const { name, value } = given;
  if (spec.value === undefined) return;
  if (!value) throw new OptionError(`${name}: expected ${spec.value}, got nothing`);
  const accepts = spec.accepts;
  const whole = (s: string) => /^\d+$/.test(s) && Number(s) >= 1;
  if (accepts === "integer" && !whole(value))
    throw new OptionError(`${name}: expected a whole number >= 1, got ${value}`);
  if (accepts === "integers" && !value.split(",").every(whole))
    throw new OptionError(`${name}: expected positive integers like 256,1024, got ${value}`);
  if (Array.isArray(accepts)) {
    const bad = value.split(",").find((v) => !accepts.includes(v));
    if (bad !== undefined)
      throw new OptionError(`${name}: ${JSON.stringify(bad)} is not one of ${accepts.join(", ")}`);
  }
}

/** The options as the suites read them: `--name=value`, or `--name` for a switch. */
export const optionArgs = (given: readonly GivenOption[]): string[] =>
  given.map((g) => (g.value === undefined ? g.name : `${g.name}=${g.value}`));

/** `bench <suite> --help`'s option lines (--json first), the names padded to one column. */
export function optionLines(options: readonly SuiteOption[]): string[] {
  const rows: [string, string][] = [
    ["--json", "print one JSON object instead of the table (progress stays on stderr)"],
    ...options.map((o): [string, string] => [
      o.value === undefined ? o.name : `${o.name}=${o.value}`,
      Array.isArray(o.accepts) ? `${o.help}: ${o.accepts.join(", ")}` : o.help,
    ]),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, h]) => `  ${k.padEnd(width)}  ${h}`);
}
