/**
 * parallelFor checks its task and thread count on every path: without a parallel service a
 * NaN item count made the chunk loop run zero times and the call "succeed" having done nothing.
 */
import { ArgumentError } from "@backplane/core";
import { parallelFor, parallelService } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

const task = { module: "no-such-module", fn: "f", args: [0, 0], items: 10 };

describe("parallelFor's checks (no parallel service installed)", () => {
  it("runs here, single-threaded", () => {
    expect(parallelService()).toBeUndefined();
  });

  it("refuses a malformed task or thread count before running anything", () => {
    const bad: [object, number, RegExp][] = [
      [{ ...task, items: Number.NaN }, 1, /items must be an integer in \[0, 2\^31\), got NaN/],
      [{ ...task, items: 2.5 }, 1, /items must be an integer/],
      [task, 0, /threads must be an integer >= 1, got 0/],
      [task, 1.5, /threads must be an integer >= 1, got 1.5/],
      [task, Number.NaN, /threads must be an integer >= 1, got NaN/],
      [{ ...task, chunk: 0, schedule: "dynamic" }, 1, /chunk must be an integer >= 1/],
      [{ ...task, countArg: 5 }, 1, /countArg must be an argument index in \[0, 2\)/],
    ];
    for (const [t, threads, text] of bad) {
      expect(() => parallelFor(t as never, threads)).toThrow(ArgumentError);
      expect(() => parallelFor(t as never, threads)).toThrow(text);
    }
  });

  it("shows a bad value as given, never failing to show it, and counts a hole in args", () => {
    const noString = Object.create(null);
    const holed: number[] = new Array(3); // [1, <hole>, 2]
    holed[0] = 1;
    holed[2] = 2;
    const bad: [object, number, RegExp][] = [
      // (a string count read as the number: "items must be an integer ..., got 3")
      [{ ...task, items: "3" }, 1, /items must be an integer in \[0, 2\^31\), got "3"/],
      [task, "2" as never, /threads must be an integer >= 1, got "2"/],
      // (String() of an object without toString was a raw TypeError)
      [{ ...task, items: noString }, 1, /items must be an integer in \[0, 2\^31\), got object/],
      [
        { ...task, countArg: noString },
        1,
        /countArg must be an argument index in \[0, 2\), got object/,
      ],
      // (every() skips a hole, which then went to WASM as NaN: 0, a pointer to address 0)
      [{ ...task, args: holed }, 1, /args must be an array of numbers/],
    ];
    for (const [t, threads, text] of bad) {
      expect(() => parallelFor(t as never, threads)).toThrow(ArgumentError);
      expect(() => parallelFor(t as never, threads)).toThrow(text);
    }
  });

  it("an empty task does nothing; a well-formed one names a missing module", () => {
    expect(() => parallelFor({ ...task, items: 0 }, 1)).not.toThrow();
    expect(() => parallelFor(task, 1)).toThrow(/no WASM module "no-such-module" is registered/);
  });
});
