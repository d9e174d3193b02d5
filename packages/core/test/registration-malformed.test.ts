/**
 * A third-party backend's definition as a JavaScript caller may get it wrong: a flag spec
 * whose optional fields have the wrong type, dotted or empty names, a flag that would hide
 * a namespace member, and hooks that throw something that is not an Error. Registration
 * refuses the definition with a RegistrationError naming the field (and records nothing),
 * and a hook's odd throw becomes a reason, never a TypeError.
 */
import { BackplaneError, backends, RegistrationError, randn, relu } from "@backplane/core";
import { type BackendDefinition, registerBackend, type UnaryParams } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

let n = 0;
/** A minimal definition with a fresh name, and `flags` for a fresh namespace. */
function withFlags(spec: unknown, name = "a"): BackendDefinition {
  const id = `malformed-${n++}`;
  return {
    name: id,
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
    flags: { [`malformedNs${n}`]: { [name]: spec } } as never,
  };
}

describe("flag specs with malformed fields", () => {
  const cases: [string, unknown, RegExp][] = [
    ["env a number", { kind: "bool", default: true, env: 5 }, /env must be/],
    ["env a list with a number", { kind: "bool", default: true, env: ["X", 5] }, /env must be/],
    ["readBy a string", { kind: "bool", default: true, readBy: "pkg" }, /readBy must be/],
    ["fromEnv not a function", { kind: "bool", default: true, fromEnv: "1" }, /fromEnv must be/],
    ["min a string", { kind: "int", default: 3, min: "0" }, /min must be/],
    ["max NaN", { kind: "int", default: 3, max: Number.NaN }, /max must be/],
    ["min on a bool", { kind: "bool", default: true, min: 0 }, /min must be/],
    [
      "extensible a string",
      { kind: "enum", values: ["a"], default: "a", extensible: "yes" },
      /extensible must be/,
    ],
    ["doc a number", { kind: "bool", default: true, doc: 5 }, /doc must be/],
  ];
  for (const [what, spec, message] of cases) {
    it(`${what}: RegistrationError naming the field, nothing recorded`, () => {
      const def = withFlags(spec);
      expect(() => registerBackend(def)).toThrow(RegistrationError);
      expect(() => registerBackend(withFlags(spec))).toThrow(message);
      expect(backends.registered()).not.toContain(def.name);
    });
  }

  it("a dotted or empty flag name, or namespace name, is refused", () => {
    expect(() => registerBackend(withFlags({ kind: "bool", default: true }, "a.b"))).toThrow(
      /flags has the name "a.b"/,
    );
    expect(() => registerBackend(withFlags({ kind: "bool", default: true }, ""))).toThrow(
      RegistrationError,
    );
    for (const ns of ["", "x.y"]) {
      const def: BackendDefinition = {
        name: `malformed-ns-${n++}`,
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        flags: { [ns]: { a: { kind: "bool", default: true } } },
      };
      expect(() => registerBackend(def)).toThrow(/names the namespace/);
    }
  });

  it("a flag or group named like a namespace member (status, flags...) is refused", () => {
    for (const member of ["status", "flags", "values", "version"]) {
      expect(() => registerBackend(withFlags({ kind: "bool", default: true }, member))).toThrow(
        /would hide/,
      );
      expect(() =>
        registerBackend(withFlags({ x: { kind: "bool", default: true } }, member)),
      ).toThrow(/would hide/);
    }
  });

  it("a well-formed spec with every optional field registers and reads its environment", () => {
    process.env.BP_MALFORMED_TEST_INT = "7";
    const def = withFlags({
      kind: "int",
      default: 3,
      min: 0,
      max: 9,
      env: ["BP_MALFORMED_UNSET", "BP_MALFORMED_TEST_INT"],
      readBy: ["some-package"],
      doc: "a test flag",
      torch: "torch.test",
    });
    registerBackend(def);
    const ns = Object.keys(def.flags ?? {})[0];
    expect(backends.describe(`${ns}.a`).value).toBe(7);
    expect(backends.describe(`${ns}.a`).readBy.map((r) => r.package)).toContain("some-package");
  });
});

describe("hooks that throw something other than an Error", () => {
  const thrown = [null, undefined, 42, "text"];
  for (const value of thrown) {
    it(`isAvailable() / isBuilt() throwing ${String(value)} is a reason, not a TypeError`, () => {
      const name = `odd-throw-${n++}`;
      registerBackend({
        name,
        namespaces: [`oddThrow${n}`],
        devices: ["cpu"],
        isAvailable: () => {
          throw value;
        },
        kernels: [
          {
            op: "relu",
            name: `${name}-relu`,
            device: "cpu",
            dtypes: ["float32"],
            deterministic: true,
            priority: 500,
            run: (p: UnaryParams) => p.x,
          },
        ],
      });
      const status = backends.namespace(`oddThrow${n}`).status();
      expect(status.available).toBe(false);
      expect(status.reason).toBe(`isAvailable() threw: ${String(value)}`);
      // The op still runs on the reference kernel: max(x, 0) of random values.
      const x = randn([9, 4]);
      const y = relu(x).hostData() as Float32Array;
      const xs = x.hostData() as Float32Array;
      for (let i = 0; i < xs.length; i++) expect(y[i]).toBe(Math.max(xs[i], 0));

      registerBackend({
        name: `${name}-built`,
        namespaces: [`oddBuilt${n}`],
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        isBuilt: () => {
          throw value;
        },
      });
      let built: unknown;
      expect(() => {
        built = backends.namespace(`oddBuilt${n}`).status();
      }).not.toThrow();
      expect(built).toMatchObject({ built: false, reason: `isBuilt() threw: ${String(value)}` });
    });
  }

  it("isBuilt() answering something that is not an Availability is a reason", () => {
    for (const answer of [5, "yes", { available: "yes" }]) {
      const id = n++;
      registerBackend({
        name: `odd-built-answer-${id}`,
        namespaces: [`oddBuiltAnswer${id}`],
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        isBuilt: () => answer as never,
      });
      const status = backends.namespace(`oddBuiltAnswer${id}`).status();
      expect(status.built).toBe(false);
      expect(status.reason).toMatch(/isBuilt\(\) returned/);
    }
  });

  it("a refused definition is a BackplaneError", () => {
    expect(() => registerBackend(withFlags({ kind: "bool", default: true, env: 5 }))).toThrow(
      BackplaneError,
    );
  });
});
