/** Where verbose trace lines go: the dispatcher's exec lines, the ranker's, backends' own. */

import { ArgumentError } from "../errors.ts";
import { show } from "../util/format.ts";
import { warnOnce } from "../util/log.ts";

let verboseSink: (line: string) => void = (line) => console.error(line);

/** Where verbose lines go (default: stderr). Returns the previous sink. */
export function setVerboseSink(sink: (line: string) => void): (line: string) => void {
  // Checked here: a bad sink would otherwise fail at the next traced op, far from this call.
  if (typeof sink !== "function")
    throw new ArgumentError(
      `setVerboseSink: the sink must be a function (line) => void, got ${show(sink)}`,
    );
  const prev = verboseSink;
  verboseSink = sink;
  return prev;
}

/** Writes one line to the verbose sink (backends trace their library calls through it). */
export function emitVerbose(line: string): void {
  try {
    verboseSink(line);
  } catch (err) {
    // A sink that throws must not fail the op being traced: its result, already made,
    // would never reach the caller and never be freed.
    warnOnce(
      "verbose-sink-threw",
      `the verbose sink threw (${err instanceof Error ? err.message : String(err)}); its lines are dropped, the ops still run`,
    );
  }
}
