/**
 * The library's log hook: warnings Backplane gives once (an inert flag, a deprecated
 * call, a nondeterministic kernel allowed by warnOnly) go through one handler, so an
 * application can route them to its own logger or silence them.
 */

import { ArgumentError } from "../errors.ts";
import { show } from "./format.ts";

export type LogLevel = "warn" | "info";
export type LogHandler = (level: LogLevel, message: string) => void;

const consoleHandler: LogHandler = (level, message) => {
  if (level === "warn") console.warn(`[backplane] ${message}`);
  else console.info(`[backplane] ${message}`);
};

let handler: LogHandler = consoleHandler;
const given = new Set<string>();

/** Routes Backplane's warnings; returns the previous handler. `null` restores the console. */
export function setLogHandler(next: LogHandler | null): LogHandler {
  // Checked here: a bad handler would otherwise fail at the next warning, in unrelated code.
  if (next !== null && next !== undefined && typeof next !== "function")
    throw new ArgumentError(
      `setLogHandler: the handler must be a function (level, message) => void, or null for the console; got ${show(next)}`,
    );
  const prev = handler;
  handler = next ?? consoleHandler;
  return prev;
}

/** Logs `message` the first time `key` is seen in this process; later calls are silent. */
export function warnOnce(key: string, message: string): void {
  if (given.has(key)) return;
  given.add(key);
  try {
    handler("warn", message);
  } catch {
    // A handler that throws must not fail the op that warned (nor leak what it made):
    // the warning goes to the console instead.
    consoleHandler("warn", message);
  }
}
