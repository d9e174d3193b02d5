/**
 * How a bench run shows progress on stderr: on a terminal one line redrawn in place (a bar
 * over the current case's samples, the case, the impl); otherwise one plain line per
 * result, so logs and CI output stay readable.
 */
import { formatMs, type ProgressEvent } from "./harness.ts";

export interface ProgressOutput {
  write(text: string): void;
  /** Whether the stream is a terminal (a bar is drawn only then). */
  isTTY: boolean;
  /** Terminal width in columns, when known. */
  columns?: number;
}

const BAR = 24;

export function progressReporter(out: ProgressOutput): {
  onEvent: (e: ProgressEvent) => void;
  /** Clears the bar (call before printing the results). */
  finish: () => void;
} {
  let drawn = false;
  let cases = 0;
  let lastDraw = 0;
  const clear = () => {
    if (drawn) out.write("\r\x1b[2K");
    drawn = false;
  };
  const draw = (caseName: string, impl: string, done: number, total: number) => {
    const filled = Math.round((BAR * done) / Math.max(1, total));
    const pct = String(Math.floor((100 * done) / Math.max(1, total))).padStart(3);
    let line = `[${"#".repeat(filled)}${"-".repeat(BAR - filled)}] ${pct}%  case ${cases}: ${caseName}  ${impl}`;
    const width = (out.columns !== undefined && out.columns >= 40 ? out.columns : 80) - 1;
    if (line.length > width) line = line.slice(0, width);
    out.write(`\r\x1b[2K${line}`);
    drawn = true;
  };
  return {
    onEvent(e) {
      if (!out.isTTY) {
        if (e.kind === "result") out.write(`  ${e.case} ${e.impl}: ${formatMs(e.ms)}\n`);
        return;
      }
      if (e.kind === "case") {
        cases++;
        draw(e.case, "warming up", 0, e.total);
      } else if (e.kind === "sample") {
        // Redraw at most every 50 ms (fast cases finish thousands of samples a second).
        const now = performance.now();
        if (e.done === e.total || now - lastDraw > 50) {
          lastDraw = now;
          draw(e.case, e.impl, e.done, e.total);
        }
      }
    },
    finish: clear,
  };
}
