/** Where verbose trace lines go: the dispatcher's exec lines, the ranker's, backends' own. */

let verboseSink: (line: string) => void = (line) => console.error(line);

/** Where verbose lines go (default: stderr). Returns the previous sink. */
export function setVerboseSink(sink: (line: string) => void): (line: string) => void {
  const prev = verboseSink;
  verboseSink = sink;
  return prev;
}

/** Writes one line to the verbose sink (backends trace their library calls through it). */
export function emitVerbose(line: string): void {
  verboseSink(line);
}
