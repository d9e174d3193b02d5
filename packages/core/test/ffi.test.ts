import { existsSync } from "node:fs";
import { ArgumentError } from "@backplane/core";
import {
  defaultSearchDirs,
  defineLibrary,
  detectRuntime,
  type HostInfo,
  initFfi,
  isNullPtr,
  libraryFileNames,
  nullPtr,
  openLibrary,
  planSearch,
  ptrAddress,
  ptrFromAddress,
  ptrOf,
  pythonSitePackages,
  readCString,
  readPointer,
  SEARCH_PATH_ENV,
  toArrayBuffer,
  validateDeclaration,
} from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

const g = globalThis as unknown as {
  process?: { pid: number; platform: string; env: Record<string, string | undefined> };
  Deno?: { pid: number };
};
const pid = g.process?.pid ?? g.Deno!.pid;
const platform = g.process?.platform ?? "linux";
const onLinux = platform === "linux";

const cstr = (s: string) => new TextEncoder().encode(`${s}\0`);
const isNative = (f: unknown) => Function.prototype.toString.call(f).includes("[native code]");

function fakeHost(platformName: string, env: Record<string, string> = {}): HostInfo {
  return { platform: platformName, arch: "x64", env: (k) => env[k] };
}

// Presence of libcudart decides whether the CUDA runtime tests run (it loads without a GPU).
const CUDART_PATHS = [
  "/usr/local/cuda-13.0/lib/libcudart.so.13",
  "/usr/local/cuda/lib64/libcudart.so.13",
  "/usr/local/cuda/lib/libcudart.so.13",
  "/usr/lib/x86_64-linux-gnu/libcudart.so.13",
];
const hasCudart = onLinux && CUDART_PATHS.some((p) => existsSync(p));
const itCudart = hasCudart ? it : it.skip;
// libc.so.6 / libm.so.6 are glibc names: the tests that call them run on Linux.
const itLinux = onLinux ? it : it.skip;

const libcDecl = defineLibrary({
  strlen: { args: ["buffer"], returns: "usize" },
  abs: { args: ["i32"], returns: "i32" },
  labs: { args: ["i64"], returns: "i64" },
  getpid: { args: [], returns: "i32" },
  getenv: { args: ["cstring"], returns: "cstring" },
  malloc: { args: ["usize"], returns: "pointer" },
  free: { args: ["pointer"], returns: "void" },
  memcpy: { args: ["pointer", "buffer", "usize"], returns: "pointer" },
});
const LIBC = { name: "c", candidates: ["libc.so.6"] };
const LIBM = { name: "m", candidates: ["libm.so.6"] };

describe("ffi: library search plan", () => {
  it("expands base names per OS, preferred versions first", () => {
    expect(libraryFileNames("cudart", "linux", ["13", "12"])).toEqual([
      "libcudart.so.13",
      "libcudart.so.12",
      "libcudart.so",
    ]);
    expect(libraryFileNames("cudart", "darwin", ["13"])).toEqual([
      "libcudart.13.dylib",
      "libcudart.dylib",
    ]);
    expect(libraryFileNames("cudart", "win32", ["13"])).toEqual([
      "cudart13.dll",
      "cudart64_13.dll",
      "cudart.dll",
      "libcudart.dll",
    ]);
    expect(libraryFileNames("libopenblas", "linux", ["0"])).toEqual([
      "libopenblas.so.0",
      "libopenblas.so",
    ]);
    expect(libraryFileNames("libc.so.6", "linux", ["7"])).toEqual(["libc.so.6"]);
    expect(libraryFileNames("/opt/x/libfoo.so", "linux")).toEqual(["/opt/x/libfoo.so"]);
  });

  it("searches the override, loader and CUDA directories before the system ones", () => {
    const dirs = defaultSearchDirs(
      fakeHost("linux", {
        [SEARCH_PATH_ENV]: "/override/a:/override/b",
        LD_LIBRARY_PATH: "/ld/path",
        CUDA_HOME: "/opt/cuda-x",
      }),
    );
    expect(dirs.slice(0, 5)).toEqual([
      "/override/a",
      "/override/b",
      "/ld/path",
      "/opt/cuda-x/lib64",
      "/opt/cuda-x/lib",
    ]);
    expect(dirs).toContain("/usr/local/cuda/lib64");
    expect(dirs).toContain("/usr/lib/x86_64-linux-gnu");
    expect(dirs.indexOf("/usr/local/cuda/lib64")).toBeGreaterThan(dirs.indexOf("/ld/path"));
  });

  it("orders attempts: env file, explicit paths, then per name every dir and the bare name", () => {
    const host = fakeHost("linux", { BACKPLANE_TEST_X: "/env/libx.so.9" });
    const plan = planSearch(
      { name: "x", candidates: ["x", "/abs/libx.so"], versions: ["9"], env: "BACKPLANE_TEST_X" },
      { searchPaths: ["/d1", "/d2/"] },
      host,
    );
    expect(plan.primary).toBe("libx.so.9");
    expect(plan.attempts.map((a) => a.path)).toEqual([
      "/env/libx.so.9",
      "/abs/libx.so",
      "/d1/libx.so.9",
      "/d2/libx.so.9",
      "libx.so.9",
      "/d1/libx.so",
      "/d2/libx.so",
      "libx.so",
    ]);
    expect(plan.attempts.filter((a) => a.system).map((a) => a.path)).toEqual([
      "libx.so.9",
      "libx.so",
    ]);
    const dirEnv = planSearch(
      { name: "x", candidates: ["x"], env: "E" },
      { searchPaths: [], systemSearch: false },
      fakeHost("linux", { E: "/env/dir" }),
    );
    expect(dirEnv.attempts.map((a) => a.path)).toEqual(["/env/dir/libx.so"]);
  });

  it("finds pip wheels' directories in every Python environment, before the system's", async () => {
    const dirs: Record<string, string[]> = {
      "/venv/lib": ["python3.12", "pkgconfig"],
      "/usr/lib": ["python3.9", "python3.11", "x86_64-linux-gnu"],
    };
    const host = {
      ...fakeHost("linux", { PYTHONPATH: "/pp", VIRTUAL_ENV: "/venv" }),
      listDir: (d: string) => dirs[d],
    };
    expect(pythonSitePackages(host)).toEqual([
      "/pp",
      "/venv/lib/python3.12/site-packages",
      "/venv/lib/python3.12/dist-packages",
      "/usr/lib/python3.11/site-packages",
      "/usr/lib/python3.11/dist-packages",
      "/usr/lib/python3.9/site-packages",
      "/usr/lib/python3.9/dist-packages",
    ]);
    const plan = planSearch(
      { name: "cudnn", candidates: ["cudnn"], versions: ["9"], pip: ["nvidia/cudnn/lib"] },
      { searchPaths: ["/sys"], systemSearch: false },
      host,
    );
    expect(plan.attempts.map((a) => a.path).slice(0, 3)).toEqual([
      "/pp/nvidia/cudnn/lib/libcudnn.so.9",
      "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
      "/venv/lib/python3.12/dist-packages/nvidia/cudnn/lib/libcudnn.so.9",
    ]);
    expect(plan.attempts.map((a) => a.path)).toContain("/sys/libcudnn.so.9");
    await expect(
      openLibrary({ name: "x", candidates: ["x"], pip: [""] }, { f: { args: [], returns: "i32" } }),
    ).rejects.toThrow(/pip must be/);
  });

  it("can search nowhere", () => {
    const plan = planSearch({ name: "x", candidates: [] }, { searchPaths: [] }, fakeHost("linux"));
    expect(plan.attempts).toEqual([]);
    expect(plan.primary).toBe("x");
  });
});

describe("ffi: declarations", () => {
  const bad: [string, unknown][] = [
    ["not an object", 42],
    ["empty", {}],
    ["unknown type", { f: { args: ["int"], returns: "void" } }],
    ["void argument", { f: { args: ["void"], returns: "void" } }],
    ["buffer result", { f: { args: [], returns: "buffer" } }],
    ["args not an array", { f: { args: "i32", returns: "void" } }],
    ["optional not boolean", { f: { args: [], returns: "void", optional: 1 } }],
    ["bad symbol name", { "not a name": { args: [], returns: "void" } }],
  ];
  for (const [what, decl] of bad) {
    it(`rejects a declaration: ${what}`, () => {
      expect(() => validateDeclaration(decl)).toThrow(ArgumentError);
    });
  }

  it("openLibrary rejects a bad declaration or spec with ArgumentError", async () => {
    const attempts: (() => Promise<unknown>)[] = [
      () => openLibrary(LIBC, { strlen: { args: ["string" as never], returns: "usize" } }),
      () => openLibrary({ name: "", candidates: [] }, libcDecl),
      () => openLibrary({ name: "c", candidates: "libc.so.6" as never }, libcDecl),
      () => openLibrary(LIBC, libcDecl, { searchPaths: "/usr/lib" as never }),
    ];
    for (const attempt of attempts) {
      let error: unknown;
      try {
        await attempt();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ArgumentError);
    }
  });
});

describe("ffi: libc and libm", () => {
  it("initialises the runtime's FFI", async () => {
    const init = await initFfi();
    expect(init).toEqual({ ok: true, runtime: detectRuntime() });
  });

  itLinux("binds and calls libc functions", async () => {
    const r = await openLibrary(LIBC, libcDecl);
    if (!r.ok) throw new Error(r.reason);
    const { lib } = r;
    expect(r.runtime).toBe(detectRuntime());
    expect(lib.path).toMatch(/libc\.so\.6$/);
    expect(r.tried[r.tried.length - 1]).toBe(lib.path);
    expect(lib.missing).toEqual([]);
    const { strlen, abs, labs, getpid, getenv } = lib.symbols;

    const hello = cstr("hello");
    expect(strlen(hello)).toBe(5n);
    expect(strlen(hello.subarray(2))).toBe(3n);
    expect(abs(-42)).toBe(42);
    expect(getpid()).toBe(pid);
    expect(labs(-7)).toBe(7n);
    expect(labs(-(2n ** 40n))).toBe(2n ** 40n);
    expect(getenv("BACKPLANE_FFI_SURELY_NOT_SET")).toBe(null);
    expect(getenv(cstr("BACKPLANE_FFI_SURELY_NOT_SET"))).toBe(null);
    expect(typeof getenv("PATH")).toBe("string");

    // No conversion needed: the runtime's own function, no per-call wrapper.
    expect(isNative(abs)).toBe(true);
    expect(isNative(getpid)).toBe(true);
    expect(isNative(strlen)).toBe(detectRuntime() !== "node"); // koffi: usize -> bigint
    lib.close();
    lib.close(); // idempotent
  });

  itLinux("passes pointers and typed arrays uniformly, and reads native memory", async () => {
    const r = await openLibrary(LIBC, libcDecl);
    if (!r.ok) throw new Error(r.reason);
    const { malloc, memcpy, free } = r.lib.symbols;
    const hello = cstr("hello");

    const p = malloc(16);
    expect(isNullPtr(p)).toBe(false);
    const q = memcpy(p, hello, hello.length);
    expect(ptrAddress(q)).toBe(ptrAddress(p));
    expect(readCString(p)).toBe("hello");
    expect(readCString(p, 2)).toBe("he");
    expect(Array.from(new Uint8Array(toArrayBuffer(p!, 3)))).toEqual([104, 101, 108]);

    // A view is a pointer argument too (its data pointer, byteOffset included).
    const dst = new Uint8Array(8);
    memcpy(dst, hello, hello.length);
    expect(readCString(dst)).toBe("hello");
    memcpy(dst.subarray(1), cstr("J"), 1);
    expect(readCString(dst)).toBe("hJllo");
    free(p);
    free(nullPtr);

    // Addresses and pointer out-parameters.
    expect(ptrAddress(ptrOf(hello.subarray(1))) - ptrAddress(ptrOf(hello))).toBe(1n);
    expect(readCString(ptrOf(hello))).toBe("hello");
    const out = new BigUint64Array([ptrAddress(ptrOf(hello))]);
    expect(readCString(readPointer(out))).toBe("hello");
    expect(readPointer(new BigUint64Array(1))).toBe(null);
    expect(ptrFromAddress(0)).toBe(null);
    expect(ptrAddress(null)).toBe(0n);
    expect(isNullPtr(nullPtr)).toBe(true);
    expect(() => readCString(null)).toThrow(ArgumentError);
    r.lib.close();
  });

  itLinux("binds doubles, floats and out-parameters from libm", async () => {
    const r = await openLibrary(LIBM, {
      frexp: { args: ["f64", "buffer"], returns: "f64" },
      sqrt: { args: ["f64"], returns: "f64" },
      sqrtf: { args: ["f32"], returns: "f32" },
    });
    if (!r.ok) throw new Error(r.reason);
    const { frexp, sqrt, sqrtf } = r.lib.symbols;
    const exponent = new Int32Array(1);
    expect(frexp(8, exponent)).toBe(0.5);
    expect(exponent[0]).toBe(4);
    expect(sqrt(2)).toBe(Math.SQRT2);
    expect(sqrtf(2)).toBe(Math.fround(Math.SQRT2));
    r.lib.close();
  });

  itLinux("reports a missing required symbol as a reason", async () => {
    const r = await openLibrary(LIBC, {
      strlen: { args: ["buffer"], returns: "usize" },
      backplane_no_such_symbol: { args: [], returns: "void" },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toMatch(/^symbol backplane_no_such_symbol not found in \S*libc\.so\.6$/);
    expect(r.tried.length).toBeGreaterThan(0);
  });

  itLinux("opens with an optional symbol missing, bound as null", async () => {
    const r = await openLibrary(LIBC, {
      backplane_no_such_symbol: { args: ["i32"], returns: "i32", optional: true },
      strlen: { args: ["buffer"], returns: "usize" },
      abs: { args: ["i32"], returns: "i32", optional: true },
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.missing).toEqual(["backplane_no_such_symbol"]);
    expect(r.lib.missing).toEqual(["backplane_no_such_symbol"]);
    expect(r.lib.symbols.backplane_no_such_symbol).toBe(null);
    expect(r.lib.symbols.abs?.(-3)).toBe(3);
    expect(r.lib.symbols.strlen(cstr("abc"))).toBe(3n);
    r.lib.close();
  });

  it("reports a missing library as a reason listing what was tried", async () => {
    const spec = { name: "nope", candidates: ["backplane_does_not_exist"], versions: ["7"] };
    const [first, second] = libraryFileNames(spec.candidates[0]!, platform, spec.versions);
    const r = await openLibrary(
      spec,
      { f: { args: [], returns: "void" } },
      {
        searchPaths: ["/backplane-nonexistent-dir"],
      },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.tried).toEqual([
      `/backplane-nonexistent-dir/${first}`,
      first,
      `/backplane-nonexistent-dir/${second}`,
      second,
    ]);
    expect(r.reason).toContain(`${first} not found (tried: /backplane-nonexistent-dir/${first}, `);
    expect(r.reason).toContain("loader error:");
    expect(r.reason).toContain(first!); // the loader's own message names the file
  });

  it("searches nowhere when told to", async () => {
    const none = await openLibrary({ name: "c", candidates: [] }, libcDecl, { searchPaths: [] });
    expect(none).toEqual({ ok: false, reason: "c not found (tried: nothing)", tried: [] });
    const noSystem = await openLibrary(LIBC, libcDecl, { searchPaths: [], systemSearch: false });
    expect(noSystem).toEqual({
      ok: false,
      reason: "libc.so.6 not found (tried: nothing)",
      tried: [],
    });
  });

  itLinux("takes an explicit path from the spec's environment variable first", async () => {
    const found = await openLibrary(LIBC, libcDecl);
    if (!found.ok) throw new Error(found.reason);
    found.lib.close();
    const env = g.process!.env;
    const key = "BACKPLANE_FFI_TEST_LIBC_PATH";
    const path = found.path.includes("/") ? found.path : "/lib/x86_64-linux-gnu/libc.so.6";
    env[key] = path;
    try {
      const r = await openLibrary(
        { name: "c", candidates: ["backplane_does_not_exist"], env: key },
        libcDecl,
        { searchPaths: [], systemSearch: false },
      );
      if (!r.ok) throw new Error(r.reason);
      expect(r.path).toBe(path);
      expect(r.tried).toEqual([path]);
      expect(r.lib.symbols.abs(-1)).toBe(1);
      r.lib.close();
    } finally {
      delete env[key];
    }
  });
});

const cudaSuite = hasCudart
  ? "ffi: CUDA runtime (libcudart.so.13, no GPU needed)"
  : "ffi: CUDA runtime (SKIPPED: libcudart.so.13 is not installed on this machine)";

describe(cudaSuite, () => {
  const cudartDecl = defineLibrary({
    cudaGetDeviceCount: { args: ["buffer"], returns: "i32" },
    cudaRuntimeGetVersion: { args: ["pointer"], returns: "i32" },
    cudaGetErrorName: { args: ["i32"], returns: "pointer" },
    cudaGetErrorString: { args: ["i32"], returns: "cstring" },
    cudaBackplaneNotAFunction: { args: [], returns: "i32", optional: true },
  });
  const CUDART = {
    name: "cudart",
    candidates: ["cudart"],
    versions: ["13"],
    env: "BACKPLANE_CUDART_PATH",
  };

  itCudart("loads libcudart and queries it without a driver", async () => {
    const r = await openLibrary(CUDART, cudartDecl);
    if (!r.ok) throw new Error(r.reason);
    const { lib } = r;
    expect(lib.path).toMatch(/libcudart\.so\.13$/);
    expect(lib.missing).toEqual(["cudaBackplaneNotAFunction"]);
    const s = lib.symbols;

    const version = new Int32Array(1);
    expect(s.cudaRuntimeGetVersion(version)).toBe(0);
    expect(version[0]).toBeGreaterThan(12999);

    // Is there a driver? Without one cudaGetDeviceCount says cudaErrorInsufficientDriver (35).
    const driver = await openLibrary(
      { name: "cuda", candidates: ["cuda"], versions: ["1"] },
      { cuInit: { args: ["u32"], returns: "i32" } },
    );
    if (driver.ok) driver.lib.close();
    const count = new Int32Array([-1]);
    const rc = s.cudaGetDeviceCount(count);
    if (driver.ok) {
      expect([0, 100]).toContain(rc); // success, or cudaErrorNoDevice
    } else {
      expect(rc).toBe(35);
    }

    expect(readCString(s.cudaGetErrorName(35))).toBe("cudaErrorInsufficientDriver");
    expect(readCString(s.cudaGetErrorName(0))).toBe("cudaSuccess");
    expect(s.cudaGetErrorString(35)).toMatch(/driver/i);
    lib.close();
  });

  itCudart("loads libcudart from an explicit path", async () => {
    const path = CUDART_PATHS.find((p) => existsSync(p))!;
    const r = await openLibrary({ name: "cudart", candidates: [path] }, cudartDecl, {
      searchPaths: [],
      systemSearch: false,
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.path).toBe(path);
    expect(r.tried).toEqual([path]);
    r.lib.close();
  });
});

// Compile-time checks of the declaration-derived types (never called).
function typeChecks() {
  return async () => {
    const r = await openLibrary(LIBC, libcDecl);
    if (!r.ok) return;
    const n: bigint = r.lib.symbols.strlen(new Uint8Array(1));
    const i: number = r.lib.symbols.abs(1);
    const p = r.lib.symbols.malloc(8n);
    // @ts-expect-error a string is not a buffer
    r.lib.symbols.strlen("abc");
    // @ts-expect-error wrong arity
    r.lib.symbols.abs();
    return [n, i, p];
  };
}
void typeChecks;
