/**
 * Loading the core on a plain (unshared) CPU memory, as a browser page that is not
 * cross-origin isolated has it: the core picks a shared memory wherever SharedArrayBuffer
 * exists, so it is hidden while `load` imports the core and the backends, then put back.
 * Imports nothing of the core itself: the core must first load inside `load`.
 *
 * Only in a process of the test file's own: vitest's, or BACKPLANE_FILE_ALONE=1 (`npm run
 * test:alone` runs each `*.alone.test.ts` so on Bun and Deno). bun test and deno test load a
 * package's files into one process, where hiding it would change the memory every other
 * file runs on (or find the core loaded already, with a shared memory): there `load` runs
 * as it is, and `ownProcess` says to skip.
 */

const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env;

/** Whether this test file runs in a process of its own (then loadOnPlainMemory hides). */
export const ownProcess: boolean =
  env !== undefined && (env.VITEST !== undefined || env.BACKPLANE_FILE_ALONE === "1");

/** Runs `load` (which imports the core) with SharedArrayBuffer hidden, in a process of its own. */
export async function loadOnPlainMemory<T>(load: () => Promise<T>): Promise<T> {
  if (!ownProcess) return load();
  const saved = globalThis.SharedArrayBuffer;
  Reflect.deleteProperty(globalThis, "SharedArrayBuffer");
  try {
    return await load();
  } finally {
    globalThis.SharedArrayBuffer = saved;
  }
}
