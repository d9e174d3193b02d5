/**
 * PyTorch timed in the same rounds as Backplane's impls: a python process that sets up its
 * cases once and then, per request, runs one case `count` times back to back and answers
 * the milliseconds per call. The harness treats it as a self-timed impl, so PyTorch's
 * samples alternate with ours in time; a suite that timed PyTorch in a separate run
 * compared figures taken minutes apart, and on a shared VM a second vCPU's speed drifts
 * by tens of percent over minutes (two-thread attention at N=2048 spanned 50-95 ms per
 * call within one process, Zen 4).
 *
 * Before it answers a timed batch, the server waits until its own threads have stopped
 * spinning (quiet.ts: no thread of its but the main one running; 300 ms at most), so the
 * next impl does not share a core with PyTorch's idle OpenMP threads; the harness does the
 * same for ours. A warm-up batch is answered at once, so the timed batch that follows
 * starts with PyTorch's threads awake, as ours are after their warm-up.
 */
import type { Harness, SelfTimed } from "../harness.ts";
import { PYTHON_UNTIL_QUIET } from "../quiet.ts";
import { TORCH_STEADY_STATE, torchPythons } from "./torch-python.ts";
import { reason } from "./types.ts";

/**
 * Python run after `setup` (which defines CASES, a dict of name -> zero-argument callable,
 * and INFO, a dict describing torch): a line of JSON per request, {"case", "count",
 * "threads", "warmUp"}, answered by the milliseconds per call.
 */
const SERVER = `
import json, sys, time
${PYTHON_UNTIL_QUIET}
${TORCH_STEADY_STATE}
print(json.dumps({"ready": True, "info": INFO}), flush=True)
with torch.no_grad():
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("threads") and torch.get_num_threads() != req["threads"]:
            torch.set_num_threads(req["threads"])
        f = CASES[req["case"]]
        t0 = time.perf_counter()
        for _ in range(req["count"]):
            f()
        ms = (time.perf_counter() - t0) / req["count"] * 1000
        if not req.get("warmUp"):
            until_quiet()
        print(json.dumps({"ms": ms}), flush=True)
`;

export interface TorchServer {
  /** What the setup reported (torch's version, its parallel backend...). */
  info: Record<string, unknown>;
  python: string;
  /** The directory the setup read its inputs from (FILES) and may write to; gone after close(). */
  dir: string;
  /** A case as the harness's self-timed impl, on `threads` torch threads. */
  impl(caseName: string, threads?: number): SelfTimed;
  close(): void;
}

type Spawned = import("node:child_process").ChildProcessWithoutNullStreams;

/** The child's stdout line by line: each call resolves with the next line, undefined once it ended. */
function lineReader(child: Spawned): () => Promise<string | undefined> {
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let buffered = "";
  let ended = false;
  const deliver = (line: string | undefined) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w(line);
    } else if (line !== undefined) lines.push(line);
  };
  child.stdout.on("data", (d) => {
    buffered += String(d);
    for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
      deliver(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
    }
  });
  const end = () => {
    ended = true;
    deliver(undefined);
  };
  child.on("close", end);
  child.on("error", end);
  return () =>
    lines.length > 0
      ? Promise.resolve(lines.shift())
      : ended
        ? Promise.resolve(undefined)
        : new Promise((resolve) => {
            waiting = resolve;
          });
}

export interface ServerOptions {
  /** Environment added to this process's. */
  env?: Record<string, string>;
  /** Inputs written to a fresh directory before the start; the setup finds it as FILES. */
  files?: Record<string, Uint8Array | Int8Array>;
  /** The torch to run (default: the newest found). */
  python?: string;
}

/**
 * Starts a Python on `setup` (code that imports torch and what else it needs, and defines
 * CASES and INFO) followed by the request loop; resolves once it reports ready, or with
 * why it could not start.
 */
export async function startTorchServer(
  setup: string,
  o: ServerOptions = {},
): Promise<TorchServer | string> {
  const python = o.python ?? torchPythons()[0]?.python;
  if (!python) return "no Python with torch found";
  const cp = await import("node:child_process");
  const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "backplane-torch-"));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  for (const [name, data] of Object.entries(o.files ?? {}))
    writeFileSync(join(dir, name), new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  const child: Spawned = cp.spawn(
    python,
    ["-u", "-c", `FILES = ${JSON.stringify(dir)}\n${setup}\n${SERVER}`],
    { env: { ...process.env, ...o.env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + String(d)).slice(-2000);
  });
  const next = lineReader(child);
  const why = () => `python exited: ${stderr.trim().split("\n").slice(-3).join(" / ")}`;
  const first = await next();
  let ready: { ready?: boolean; info?: Record<string, unknown> } = {};
  try {
    ready = first ? JSON.parse(first) : {};
  } catch {}
  if (!ready.ready) {
    child.kill();
    removeDir();
    return first === undefined ? why() : `unexpected first line: ${first.slice(0, 200)}`;
  }
  return {
    info: ready.info ?? {},
    python,
    dir,
    impl: (caseName, threads) => ({
      async timeBatch(count: number, warmUp = false): Promise<number> {
        child.stdin.write(`${JSON.stringify({ case: caseName, count, threads, warmUp })}\n`);
        const line = await next();
        if (line === undefined) throw new Error(why());
        return (JSON.parse(line) as { ms: number }).ms;
      },
    }),
    close: () => {
      child.stdin.end();
      child.kill();
      removeDir();
    },
  };
}

/**
 * Runs `body` with the server `start` makes (undefined when it could not start: a note
 * says why; `describe` says what it is otherwise) and closes the server after it.
 */
export async function withTorchServer(
  h: Harness,
  start: () => Promise<TorchServer | string>,
  describe: (server: TorchServer) => string,
  body: (server: TorchServer | undefined) => Promise<void>,
): Promise<void> {
  const server = await start().catch(reason);
  h.note(typeof server === "string" ? `torch: unavailable: ${server}` : describe(server));
  try {
    await body(typeof server === "string" ? undefined : server);
  } finally {
    if (typeof server !== "string") server.close();
  }
}
