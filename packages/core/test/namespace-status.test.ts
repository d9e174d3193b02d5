/**
 * One answer per namespace: backends.status(), backends.<ns>.status(), isBuilt() and
 * isAvailable() agree when a backend replaces a namespace's status() (backend-cpu-mkl does:
 * mkl is available only when the library loaded is MKL); and the cuFFT plan cache of an
 * indexed device refuses writes with a typed error, as the bare cache does.
 */
import { ArgumentError, backends, type NamespaceStatus } from "@backplane/core";
import { defineBackend, registerBackend } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

/** Registers a backend answering for `ns` whose api replaces status() with `status`. */
function withOwnStatus(name: string, ns: string, status: () => unknown): void {
  registerBackend(
    defineBackend({
      name,
      namespaces: [ns], // its own namespace: bun runs every file in one process
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      api: { [ns]: { status } },
    }),
  );
}

const rootStatus = (ns: string): NamespaceStatus | undefined =>
  backends.status().find((s) => s.namespace === ns);

describe("a namespace whose backend replaces status()", () => {
  it("answers the same in backends.status(), status(), isBuilt() and isAvailable()", () => {
    const own: NamespaceStatus = {
      namespace: "auditOwnStatus",
      built: true,
      available: false,
      reason: "the library loaded is not the one this namespace is about",
    };
    withOwnStatus("audit-own-status", "auditOwnStatus", () => own);
    const ns = backends.namespace("auditOwnStatus");
    expect(ns.status()).toEqual(own);
    expect(rootStatus("auditOwnStatus")).toEqual(own);
    expect(ns.isAvailable()).toBe(false);
    expect(ns.isBuilt()).toBe(true);
  });

  it("falls back to the registry's answer when it throws, answers no status, or asks itself", () => {
    withOwnStatus("audit-throwing-status", "auditThrowingStatus", () => {
      throw new Error("broken");
    });
    expect(rootStatus("auditThrowingStatus")).toMatchObject({ built: true, available: true });
    expect(backends.namespace("auditThrowingStatus").isAvailable()).toBe(true);

    withOwnStatus("audit-odd-status", "auditOddStatus", () => 42);
    expect(rootStatus("auditOddStatus")).toMatchObject({ built: true, available: true });

    // A status() built on isAvailable() must not recurse forever.
    withOwnStatus("audit-self-status", "auditSelfStatus", () => {
      const ns = backends.namespace("auditSelfStatus");
      return { namespace: "auditSelfStatus", built: ns.isBuilt(), available: !ns.isAvailable() };
    });
    expect(rootStatus("auditSelfStatus")).toMatchObject({ built: true, available: false });
    expect(backends.namespace("auditSelfStatus").isAvailable()).toBe(false);
  });
});

describe("cufftPlanCache[i]", () => {
  it("size is read-only and other names are unknown: ArgumentError, as for the bare cache", () => {
    const cache = backends.cuda.cufftPlanCache;
    for (const target of [cache, cache[1]]) {
      expect(() => Reflect.set(target, "size", 3)).toThrow(ArgumentError);
      expect(() => Reflect.set(target, "size", 3)).toThrow(/size is read-only/);
      expect(target.size).toBe(0);
    }
    // A typo must not add a property that silently does nothing.
    expect(() => Reflect.set(cache[1], "maxsize", 5)).toThrow(/did you mean maxSize/);
    expect(() => Reflect.get(cache[1], "maxsize")).toThrow(ArgumentError);
    const before = cache[1].maxSize;
    cache[1].maxSize = before + 7;
    expect(cache[1].maxSize).toBe(before + 7);
    expect(() => {
      cache[1].maxSize = -1;
    }).toThrow(ArgumentError);
    cache[1].maxSize = before;
    cache[1].clear();
  });
});

describe("backends.describe(flag).value", () => {
  it("is the value backends.<ns> shows: optEinsum.enabled is false where the plugin cannot run", () => {
    const d = backends.describe("optEinsum.enabled");
    expect(d.value).toBe(backends.optEinsum.enabled);
    if (!backends.optEinsum.isAvailable()) expect(d.value).toBe(false);
    expect(backends.describe("torch.backends.opt_einsum.enabled").value).toBe(
      backends.optEinsum.enabled,
    );
  });
});
