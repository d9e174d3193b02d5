/**
 * The spin limits of the native thread pools (src/native/spin-env.ts): set in the C
 * environment before OpenBLAS and oneDNN load, never over a value the user set. Their
 * effect is a benchmark (`npm run bench -- interleave`), not a timed test.
 */
import { ready } from "@backplane/core";
import { describe, expect } from "vitest";
import { NATIVE_BACKEND } from "../src/index.ts";
import { cstr, libc } from "../src/native/libc.ts";
import { limitNativeSpinning, SPIN_DEFAULTS } from "../src/native/spin-env.ts";
import { itNative } from "./native-helpers.ts";

describe("native thread pools' spin limits", () => {
  itNative("are in the C environment once the native backend has loaded", async () => {
    await ready(NATIVE_BACKEND);
    const c = (await libc())!;
    for (const name of Object.keys(SPIN_DEFAULTS)) expect(c.getenv(cstr(name))).toBeTruthy();
  });

  itNative("are set only where the user set nothing", async () => {
    const c = (await libc())!;
    const saved = Object.fromEntries(
      Object.keys(SPIN_DEFAULTS).map((n) => [n, c.getenv(cstr(n))] as const),
    );
    try {
      for (const n of Object.keys(SPIN_DEFAULTS)) c.unsetenv(cstr(n));
      c.setenv(cstr("GOMP_SPINCOUNT"), cstr("999"), 1); // the user's
      const set = await limitNativeSpinning();
      expect(set.sort()).toEqual(["KMP_BLOCKTIME", "OPENBLAS_THREAD_TIMEOUT"]);
      expect(c.getenv(cstr("GOMP_SPINCOUNT"))).toBe("999");
      expect(c.getenv(cstr("OPENBLAS_THREAD_TIMEOUT"))).toBe(SPIN_DEFAULTS.OPENBLAS_THREAD_TIMEOUT);
      expect(c.getenv(cstr("KMP_BLOCKTIME"))).toBe(SPIN_DEFAULTS.KMP_BLOCKTIME);
      expect(await limitNativeSpinning()).toEqual([]); // all set now
    } finally {
      for (const [n, v] of Object.entries(saved))
        v ? c.setenv(cstr(n), cstr(v), 1) : c.unsetenv(cstr(n));
    }
  });
});
