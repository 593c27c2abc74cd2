/**
 * discoverNetns(): every network namespace in use on the machine, pinned or not, found through the
 * pin directories and /proc/PID/ns/net of every process, each once (deduplicated by st_dev, st_ino).
 */
import { readdirSync, statSync } from "node:fs";
import { fsError, NetnsError, NetnsNotFoundError } from "./errors.js";
import { NetNS } from "./handle.js";
import { type AllNetnsOptions, NetnsIteration, pinCandidates } from "./iterate.js";

/** A namespace found by discoverNetns(). */
export interface DiscoveredNetns {
  /** The first pinned name, or undefined when nothing pins it. */
  name: string | undefined;
  /** Every name it is pinned under, in directory order. */
  names: string[];
  /** The processes whose main thread is in it, ascending. */
  pids: number[];
  /** The path the handle was opened from (a pin, else /proc/PID/ns/net). */
  path: string;
  /** An open handle, lent until the loop moves on. */
  netns: NetNS;
}

/**
 * What to call a discovered namespace: its pinned name, else "pid:N" of its first process (which
 * opens it again), else "net:[INODE]" as /proc shows it.
 */
export function discoveredLabel(found: DiscoveredNetns): string {
  return found.name ?? (found.pids.length > 0 ? `pid:${found.pids[0]}` : `net:[${found.netns.ino}]`);
}

/** What the scan learnt about one namespace before opening it. */
interface Sighting {
  dev: number;
  ino: number;
  names: string[];
  paths: string[];
  pids: number[];
}

/**
 * discoverNetns finds the namespaces pinned in `options.dirs` (default [NETNS_RUN_DIR]) and those of
 * every process in /proc, with the pids in each and its pinned names. It scans everything when the
 * loop starts, then opens one namespace per step (a pin if it has one, else the first of its
 * processes still alive there). A namespace held only by a file descriptor or by a non-main thread is
 * invisible to it. Processes that exit meanwhile are skipped; other failures (EACCES on another
 * user's process without CAP_SYS_PTRACE, a bad pin) are recorded on `errors`.
 */
export function discoverNetns(options: AllNetnsOptions = {}): NetnsIteration<DiscoveredNetns> {
  const dirs = options.dirs;
  return new NetnsIteration((errors) => walk(dirs, errors));
}

function* walk(dirs: readonly string[] | undefined, errors: NetnsError[]): Generator<DiscoveredNetns> {
  const seen = new Map<string, Sighting>();
  const sighting = (dev: number, ino: number): Sighting => {
    const key = `${dev}:${ino}`;
    let s = seen.get(key);
    if (!s) {
      s = { dev, ino, names: [], paths: [], pids: [] };
      seen.set(key, s);
    }
    return s;
  };
  for (const { name, path } of pinCandidates(dirs, errors)) {
    try {
      using ns = NetNS.open(path, name);
      const s = sighting(ns.dev, ns.ino);
      s.names.push(name);
      s.paths.push(path);
    } catch (err) {
      if (!(err instanceof NetnsError)) throw err;
      errors.push(err);
    }
  }
  for (const pid of processes(errors)) {
    const path = `/proc/${pid}/ns/net`;
    try {
      const st = statSync(path);
      const s = sighting(st.dev, st.ino);
      s.pids.push(pid);
      s.paths.push(path);
    } catch (err) {
      const e = fsError(path, "cannot look at", err);
      if (!(e instanceof NetnsNotFoundError)) errors.push(e);
    }
  }
  for (const s of seen.values()) {
    const opened = openSighting(s, errors);
    if (!opened) continue;
    try {
      yield { name: s.names[0], names: s.names, pids: s.pids, path: opened.path, netns: opened };
    } finally {
      opened.close();
    }
  }
}

/** The numeric entries of /proc, ascending. */
function processes(errors: NetnsError[]): number[] {
  try {
    return readdirSync("/proc")
      .filter((e) => /^\d+$/.test(e))
      .map(Number)
      .sort((a, b) => a - b);
  } catch (err) {
    errors.push(fsError("/proc", "cannot list processes", err));
    return [];
  }
}

/**
 * openSighting opens the first of its paths (pins, then processes) that still leads to the same
 * namespace: a pin may have been removed, a process may
 * have exited, or its pid been reused by a process elsewhere. A namespace with no live path left is
 * gone and skipped; any other failure of the last path is recorded.
 */
function openSighting(s: Sighting, errors: NetnsError[]): NetNS | undefined {
  let failure: NetnsError | undefined;
  for (const path of s.paths) {
    try {
      const ns = NetNS.open(path, s.names[0]);
      if (ns.dev === s.dev && ns.ino === s.ino) return ns;
      ns.close();
    } catch (err) {
      if (!(err instanceof NetnsError)) throw err;
      failure = err instanceof NetnsNotFoundError ? failure : err;
    }
  }
  if (failure) errors.push(failure);
  return undefined;
}
