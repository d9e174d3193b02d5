/**
 * Waiting for a process's idle threads to stop spinning before the next sample, so an impl
 * never shares a core with what the one before it left running (an OpenMP or BLAS pool
 * spins for a while after each call: PyTorch 2.13's libgomp 8 ms after a 2-thread conv2d on
 * a Zen 4).
 *
 * On Linux each thread's scheduler state is read from /proc: quiet is no thread but the
 * caller running, twice 0.5 ms apart. CPU time cannot tell it there: with tick accounting
 * (CONFIG_HZ=250) a spinning thread's time advances in 4 ms steps, so a window of a few ms
 * often reads idle while a thread spins. Elsewhere it falls back to CPU time over 10 ms
 * windows, and where there is none of that either, to a 40 ms pause.
 */
import { builtinModule, host } from "@backplane/core/cpu";

type Fs = typeof import("node:fs");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How many threads of this process other than the caller's are running, or undefined. */
function othersRunning(fs: Fs): number | undefined {
  try {
    const self = fs.readlinkSync("/proc/thread-self").split("/").pop();
    let running = 0;
    for (const tid of fs.readdirSync("/proc/self/task")) {
      if (tid === self) continue;
      let stat: string;
      try {
        stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, "latin1");
      } catch {
        continue; // the thread ended meanwhile
      }
      // The state follows the command name, which is in parentheses and may hold spaces.
      if (stat[stat.lastIndexOf(")") + 2] === "R") running++;
    }
    return running;
  } catch {
    return undefined;
  }
}

/** Resolves once no other thread of this process runs (see the header), or after maxMs. */
export async function untilQuiet(maxMs = 300): Promise<void> {
  const end = performance.now() + maxMs;
  const fs = builtinModule<Fs>("node:fs");
  if (fs && othersRunning(fs) !== undefined) {
    let quiet = 0;
    while (performance.now() < end) {
      quiet = othersRunning(fs) === 0 ? quiet + 1 : 0;
      if (quiet >= 2) return;
      await sleep(0.5);
    }
    return;
  }
  const p = host.process as (NodeJS.Process & typeof host.process) | undefined;
  if (typeof p?.cpuUsage !== "function") {
    await sleep(40);
    return;
  }
  while (performance.now() < end) {
    const u0 = p.cpuUsage();
    const t0 = performance.now();
    await sleep(10);
    const u = p.cpuUsage(u0);
    if ((u.user + u.system) / 1000 / (performance.now() - t0) < 0.2) return;
  }
}

/**
 * The same wait in Python, for a peer's server process (peers/torch-server.ts): defines
 * until_quiet(), which the server calls before it answers.
 */
export const PYTHON_UNTIL_QUIET = `
import os, resource, threading, time

def _others_running():
    me = str(threading.get_native_id())
    try:
        tids = os.listdir('/proc/self/task')
    except OSError:
        return None
    running = 0
    for tid in tids:
        if tid == me:
            continue
        try:
            with open('/proc/self/task/%s/stat' % tid, encoding='latin-1') as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(')') + 2] == 'R':
            running += 1
    return running

def _cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def until_quiet(max_s=0.3):
    end = time.perf_counter() + max_s
    if _others_running() is not None:
        quiet = 0
        while time.perf_counter() < end:
            quiet = quiet + 1 if _others_running() == 0 else 0
            if quiet >= 2:
                return
            time.sleep(0.0005)
        return
    while time.perf_counter() < end:
        c0 = _cpu_s(); t0 = time.perf_counter()
        time.sleep(0.01)
        if (_cpu_s() - c0) < 0.2 * (time.perf_counter() - t0):
            return
`;
