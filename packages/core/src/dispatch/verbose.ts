/** Where verbose trace lines go: the dispatcher's exec lines, the ranker's, backends' own. */

import { ArgumentError } from "../errors.ts";
import { show } from "../util/format.ts";

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
  verboseSink(line);
}
