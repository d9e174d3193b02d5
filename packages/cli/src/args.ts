/**
 * The backplane command's argument parsing, apart from cli.ts (which runs on import) so
 * it can be tested directly: flags, shapes, and the exit code an error maps to.
 */

/** A bad command line: exit 2 with the message and a pointer to `backplane help`. */
export class UsageError extends Error {}

/** Flags that never take a value: `--run yes` must not swallow "yes". */
export const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(["json", "run", "help"]);
/** Flags that need a value (`--shapes 2x3` or `--shapes=2x3`). */
export const VALUE_FLAGS: ReadonlySet<string> = new Set(["shapes", "dtype", "device", "strategy"]);

export interface ParsedArgs {
  command: string;
  positional: string[];
  flags: Record<string, string | true>;
}

export function parse(argv: readonly string[]): ParsedArgs {
  const [command = "help", ...rest] = argv;
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    // -h anywhere is help, as --help is; any other -x is no option of ours, and not an op
    // or a shape either ("-1x2" stays positional: parseShape says what is wrong with it;
    // "->" and "->i" are einsum equations, which begin with the arrow for scalar operands).
    if (a === "-h") {
      flags.help = true;
      continue;
    }
    if (/^-[^-\d>]/.test(a))
      throw new UsageError(`unknown option ${a} (options are spelled --name, e.g. --help)`);
    if (!a.startsWith("--")) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const k = eq < 0 ? a.slice(2) : a.slice(2, eq);
    const v = eq < 0 ? undefined : a.slice(eq + 1);
    if (BOOLEAN_FLAGS.has(k)) {
      if (v !== undefined) throw new UsageError(`--${k} takes no value (got --${k}=${v})`);
      flags[k] = true;
    } else if (VALUE_FLAGS.has(k)) {
      // Given twice, one value would silently win: say so instead.
      if (flags[k] !== undefined) throw new UsageError(`--${k} given twice; give it once`);
      if (v !== undefined) flags[k] = v;
      else if (rest[i + 1] !== undefined && !rest[i + 1].startsWith("--")) flags[k] = rest[++i];
      // A value flag left bare would otherwise be silently ignored.
      else throw new UsageError(`--${k} needs a value, e.g. --${k}=...`);
      if (flags[k] === "") throw new UsageError(`--${k} needs a value, got an empty one`);
    } else {
      // Unknown: never take the next token (allowOnly names it as unknown).
      flags[k] = v ?? true;
    }
  }
  return { command, positional, flags };
}

/**
 * "2x3" -> [2, 3]; "" and "scalar" -> []. Only plain decimal digits per dimension:
 * Number() would read "2x" as [2, 0] and "1e1" as 10.
 */
export function parseShape(s: string, what: string): number[] {
  if (s === "" || s === "scalar") return [];
  const parts = s.split("x");
  if (!parts.every((p) => /^\d+$/.test(p) && Number.isSafeInteger(Number(p))))
    throw new UsageError(`${what}: ${JSON.stringify(s)} is not like 2x3`);
  return parts.map(Number);
}

/**
 * Codes of the core's typed errors that mean the user's input was wrong (a malformed
 * equation, mismatched shapes, an unsupported dtype, an unknown device or flag).
 */
export const USER_ERROR_CODES: ReadonlySet<string> = new Set([
  "E_ARGUMENT",
  "E_SHAPE",
  "E_DTYPE",
  "E_DEVICE",
  "E_FLAG",
  "E_UNKNOWN_NAMESPACE",
]);

/** The exit code and one-line message for an error main() threw. */
export function describeError(e: unknown): { code: 1 | 2; message: string } {
  if (e instanceof UsageError)
    return { code: 2, message: `backplane: ${e.message}\nRun "backplane help" for usage.` };
  // By code, not instanceof: a second copy of @backplane/core still maps the same way.
  const code = (e as { code?: unknown } | null)?.code;
  if (e instanceof Error && typeof code === "string" && code.startsWith("E_")) {
    // A user mistake: one line, no stack. Anything else keeps its whole message.
    return USER_ERROR_CODES.has(code)
      ? { code: 2, message: `backplane: ${e.name}: ${e.message.split("\n")[0]}` }
      : { code: 1, message: `backplane: ${e.name}: ${e.message}` };
  }
  return { code: 1, message: e instanceof Error ? (e.stack ?? String(e)) : String(e) };
}
