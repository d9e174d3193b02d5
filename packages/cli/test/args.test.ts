/** The argument parser and error mapping, without spawning the command. */
import { ArgumentError, DTypeError, NoKernelError, ShapeError } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { describeError, parse, parseShape, UsageError } from "../src/args.ts";

describe("parse", () => {
  it("boolean flags never take the next token", () => {
    const p = parse(["explain", "--run", "matmul", "--shapes", "2x3,3x4"]);
    expect(p.positional).toEqual(["matmul"]);
    expect(p.flags).toEqual({ run: true, shapes: "2x3,3x4" });
    expect(parse(["explain", "matmul", "--run", "yes"]).positional).toEqual(["matmul", "yes"]);
    expect(() => parse(["explain", "--run=yes"])).toThrow(/--run takes no value/);
  });

  it("a value flag without a value is a usage error", () => {
    expect(() => parse(["einsum-path", "ij->i", "2x2", "--strategy"])).toThrow(UsageError);
    expect(() => parse(["einsum-path", "ij->i", "2x2", "--strategy"])).toThrow(
      /--strategy needs a value/,
    );
    expect(() => parse(["explain", "matmul", "--shapes", "--run"])).toThrow(/--shapes needs/);
    expect(() => parse(["explain", "matmul", "--dtype="])).toThrow(/--dtype needs/);
    expect(parse(["einsum-path", "--strategy=dp"]).flags.strategy).toBe("dp");
  });
});

describe("single-dash arguments", () => {
  it("-h is help anywhere; another -x is an unknown option; -1x2 stays a (bad) shape", () => {
    expect(parse(["explain", "-h"]).flags).toEqual({ help: true });
    expect(parse(["explain", "matmul", "-h"]).positional).toEqual(["matmul"]);
    expect(() => parse(["explain", "matmul", "-x"])).toThrow(UsageError);
    expect(() => parse(["explain", "matmul", "-run"])).toThrow(/unknown option -run/);
    expect(parse(["einsum-path", "ij->i", "-1x2"]).positional).toEqual(["ij->i", "-1x2"]);
  });

  it('an equation that begins with the arrow ("->", "->i") is positional, not an option', () => {
    expect(parse(["einsum-path", "->", "scalar"]).positional).toEqual(["->", "scalar"]);
    expect(parse(["einsum-path", "->i", "2"]).positional).toEqual(["->i", "2"]);
  });
});

describe("repeated value flags", () => {
  it("a value flag given twice is a usage error (no silent last-one-wins)", () => {
    for (const argv of [
      ["explain", "matmul", "--shapes", "2x3,3x4", "--shapes", "1x1"],
      ["explain", "matmul", "--shapes=2x3,3x4", "--dtype", "float32", "--dtype=float64"],
    ]) {
      expect(() => parse(argv)).toThrow(UsageError);
      expect(() => parse(argv)).toThrow(/given twice/);
    }
  });
});

describe("parseShape", () => {
  it("accepts only non-negative decimal integers per dimension", () => {
    expect(parseShape("2x3", "s")).toEqual([2, 3]);
    expect(parseShape("0x4", "s")).toEqual([0, 4]);
    expect(parseShape("", "s")).toEqual([]);
    expect(parseShape("scalar", "s")).toEqual([]);
    for (const bad of ["2x", "x2", "1e1x2", "2xx3", "-1x2", " 2", "2.0", "2x3x"]) {
      expect(() => parseShape(bad, "shape")).toThrow(UsageError);
      expect(() => parseShape(bad, "shape")).toThrow(`shape: ${JSON.stringify(bad)} is not like`);
    }
  });
});

describe("describeError", () => {
  it("maps the core's user-input errors to exit 2 with one line, other errors to 1", () => {
    for (const e of [
      new ArgumentError("einsum: bad\nmore"),
      new ShapeError("matmul: no"),
      new DTypeError("int32"),
    ]) {
      const d = describeError(e);
      expect(d.code).toBe(2);
      expect(d.message).toMatch(new RegExp(`^backplane: ${e.name}: `));
      expect(d.message).not.toMatch(/\n/);
    }
    expect(describeError(new UsageError("x")).code).toBe(2);
    expect(describeError(new NoKernelError("matmul", [])).code).toBe(1);
    expect(describeError(new Error("boom")).code).toBe(1);
    expect(describeError(null).code).toBe(1);
  });
});
