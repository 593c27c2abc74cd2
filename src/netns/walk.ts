/**
 * The namespace walker: every network namespace pinned in some directories and, optionally, every
 * one a process is in, each once (by st_dev, st_ino), with the caller's own first or left out.
 * Listing, destroying, the terminator and `netns ls` all walk through here. Failures are collected
 * on the iteration, never thrown, so one bad entry never hides the others.
 *
 * Nothing is opened before it has been looked at: pins and /proc entries are stat()ed first (which
 * never opens a file), and a namespace is opened only through NetNS, which checks the file before
 * opening it — a device node or FIFO dropped into a pin directory is never opened.
 */
import { readdirSync, type Stats, statSync } from "node:fs";
import type { SockdiagError } from "../sys/errors.js";
import { threadNetns } from "./enter.js";
import {
  fsError,
  NetnsError,
  type NetnsNote,
  NetnsNotFoundError,
  NetnsUnreadableError,
  NotANetnsError,
  netnsNote,
  PinDirectoryNotFoundError,
  sysErrorOf,
} from "./errors.js";
import { lookError, NetNS } from "./handle.js";
import { current } from "./open.js";
import { DEFAULT_NETNS_DIRS } from "./pinned.js";
import { type NetnsRef, walkLabel } from "./ref.js";

/**
 * NamespaceFailure: one namespace that failed while the others went on. Every walk, listing,
 * destroy, conntrack run and termination reports failed namespaces in this shape.
 */
export interface NamespaceFailure {
  /** The namespace's label (pinned name, "pid:N", path; "(host)" for the caller's own). */
  netns: string;
  /** What went wrong, with its `code` and `cause`. */
  error: SockdiagError;
}

/**
 * NamespaceNote: one namespace passed over without that being a failure — by a walk (a NetnsNote:
 * it vanished, may not be inspected, its pin holds no namespace), or by a call with nothing to do
 * there (conntrack's "no-conntrack").
 */
export interface NamespaceNote<Reason extends string = NetnsNote> {
  /** The namespace's label, as in NamespaceFailure. */
  netns: string;
  /** Why it was passed over. */
  skipped: Reason;
  /** What was met there, for people. */
  message: string;
}

/**
 * recordNetnsError puts a namespace-walk error met at `label` among the `notes` where it is worth
 * telling but no failure (netnsNote names why), else among the `failures`.
 */
export function recordNetnsError(
  error: NetnsError,
  label: string,
  failures: NamespaceFailure[],
  notes: NamespaceNote<string>[],
): void {
  const skipped = netnsNote(error);
  if (skipped) notes.push({ netns: label, skipped, message: error.message });
  else failures.push({ netns: label, error });
}

/** Where the walk puts each failure it meets, and how many namespaces it found when it started. */
interface FailureSink {
  push(error: NetnsError): void;
  found?(count: number): void;
}

/**
 * NetnsIteration is a re-iterable sequence of namespaces with the failures met so far. Each pass
 * starts a fresh walk and clears `failures`. Handles it yields are lent: each is closed when the loop
 * moves on, breaks or throws — call `netns.dup()` to keep one.
 */
export class NetnsIteration<T> implements Iterable<T> {
  /** Failures met so far in the current pass; readable inside the loop and after it. */
  readonly failures: NamespaceFailure[] = [];
  /** Namespaces passed over so far in the current pass (vanished, unreadable, no namespace in a pin). */
  readonly notes: NamespaceNote[] = [];
  /**
   * How many namespaces the current pass found when it started (some may vanish before they are
   * opened): undefined until its first step.
   */
  found: number | undefined;
  readonly #walk: (failures: FailureSink) => Iterator<T>;
  readonly #sink: FailureSink = {
    push: (error) => recordNetnsError(error, error.netns, this.failures, this.notes),
    found: (count) => {
      this.found = count;
    },
  };

  /** `walk` yields the entries and pushes every failure into the sink it is given. */
  constructor(walk: (failures: FailureSink) => Iterator<T>) {
    this.#walk = walk;
  }

  [Symbol.iterator](): Iterator<T> {
    threadNetns.assertUsable();
    this.failures.length = 0;
    this.notes.length = 0;
    this.found = undefined;
    return this.#walk(this.#sink);
  }
}

/** Where and how to walk. */
export interface WalkOptions {
  /**
   * Pin directories, searched in order; each must exist. Default DEFAULT_NETNS_DIRS, each where
   * it exists (a default directory's absence means no pins there).
   */
  netnsDirs?: readonly string[];
  /** Also every namespace a process is in (/proc/PID/ns/net). Default true. */
  discover?: boolean;
  /**
   * The caller's own namespace: "first" yields it before anything else (host: true) and never again;
   * "skip" leaves it out wherever it is found; "found" yields it where it is found, like any other.
   * Default "found".
   */
  host?: "first" | "skip" | "found";
}

/** One namespace of a walk. */
export interface NetnsEntry {
  /** What names it, for results and for reopening it later. */
  ref: NetnsRef;
  /** Every name it is pinned under, in directory order. */
  names: string[];
  /** The processes whose main thread is in it, ascending (when processes are walked). */
  pids: number[];
  /** The path the handle was opened from. */
  path: string;
  /** Whether it is the caller's own namespace, yielded first (host: "first"). */
  host: boolean;
  /** An open handle, lent until the loop moves on. */
  netns: NetNS;
}

/** What the scan learnt about one namespace before opening it. */
interface Sighting {
  dev: number;
  ino: number;
  names: string[];
  /** Paths that led to it, pins first, each with the process it belongs to. */
  paths: [string, number | undefined][];
  pids: number[];
}

/**
 * walkNetns walks the namespaces `options` selects. It scans the pin directories (and /proc) when
 * the loop starts, then opens one namespace per step through the first of its paths that still
 * leads to it. A namespace held only by a descriptor or a non-main thread is invisible to it.
 * Failures — an unreadable directory, an entry that is no namespace, a namespace that vanished or
 * that may not be inspected — go to `failures` as NamespaceFailures, or to `notes` for those that are
 * no failure.
 */
export function walkNetns(options: WalkOptions = {}): NetnsIteration<NetnsEntry> {
  return new NetnsIteration((failures) => walk(options, failures));
}

/**
 * What every report and output calls the namespace the caller runs in (its thread's at the time):
 * a name no pin can collide with in practice, the same in text and JSON.
 */
export const HOST_NETNS_NAME = "(host)";

function* walk(options: WalkOptions, failures: FailureSink): Generator<NetnsEntry> {
  const host = options.host ?? "found";
  const self = host === "found" ? undefined : current();
  try {
    const sightings = scan(options, failures);
    const selfFound = self !== undefined && sightings.has(`${self.dev}:${self.ino}`);
    failures.found?.(sightings.size - (selfFound ? 1 : 0) + (host === "first" ? 1 : 0));
    if (self && host === "first") {
      yield {
        ref: { ...self.ref, label: HOST_NETNS_NAME },
        names: [],
        pids: [],
        path: self.path,
        host: true,
        netns: self,
      };
    }
    for (const s of sightings.values()) {
      if (self && s.dev === self.dev && s.ino === self.ino) continue;
      const opened = openSighting(s, failures);
      if (!opened) continue;
      const ref = { ...opened.ref, label: walkLabel(s.names[0], s.pids, opened.ino) };
      try {
        yield { ref, names: s.names, pids: s.pids, path: opened.path, host: false, netns: opened };
      } finally {
        opened.close();
      }
    }
  } finally {
    self?.close();
  }
}

/** Every namespace the pins (and processes) lead to, in the order first seen. */
function scan(options: WalkOptions, failures: FailureSink): Map<string, Sighting> {
  const seen = new Map<string, Sighting>();
  const sighting = (st: Stats): Sighting => {
    const key = `${st.dev}:${st.ino}`;
    let s = seen.get(key);
    if (!s) {
      s = { dev: st.dev, ino: st.ino, names: [], paths: [], pids: [] };
      seen.set(key, s);
    }
    return s;
  };
  for (const { name, path } of pinCandidates(options.netnsDirs, failures)) {
    let st: Stats;
    try {
      st = statSync(path);
    } catch (err) {
      failures.push(lookError(name, path, "cannot look at", err));
      continue;
    }
    // Only a regular file can be a namespace file: the rest is never opened.
    if (st.isDirectory() || !st.isFile()) {
      failures.push(new NotANetnsError(name, st.isDirectory() ? "directory" : "special-file"));
      continue;
    }
    const s = sighting(st);
    s.names.push(name);
    s.paths.push([path, undefined]);
  }
  if (options.discover === false) return seen;
  for (const pid of processes(failures)) {
    const path = `/proc/${pid}/ns/net`;
    try {
      const s = sighting(statSync(path));
      s.pids.push(pid);
      s.paths.push([path, pid]);
    } catch (err) {
      const e = fsError(path, "cannot look at", err);
      if (e instanceof NetnsNotFoundError) continue; // the process exited
      failures.push(
        e.cause?.code === "EACCES" ? new NetnsUnreadableError(path, "cannot look at", e.cause) : e,
      );
    }
  }
  return seen;
}

/** A pin to look at. */
interface Candidate {
  name: string;
  path: string;
}

/** The entries of each pin directory (default: DEFAULT_NETNS_DIRS); a failure to list one is recorded. */
function* pinCandidates(dirs: readonly string[] | undefined, failures: FailureSink): Generator<Candidate> {
  for (const dir of dirs ?? DEFAULT_NETNS_DIRS) {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch (err) {
      // A default directory exists only once something was pinned there (ip netns creates its
      // own): its absence means "no pins". A directory the caller named must exist.
      if (dirs === undefined && (err as NodeJS.ErrnoException).code === "ENOENT") continue;
      const cause = sysErrorOf(err);
      const Failure = cause.code === "ENOENT" ? PinDirectoryNotFoundError : NetnsError;
      failures.push(new Failure(dir, "cannot read the pin directory", cause));
      continue;
    }
    for (const name of names) yield { name, path: `${dir}/${name}` };
  }
}

/** The numeric entries of /proc, ascending. */
function processes(failures: FailureSink): number[] {
  try {
    return readdirSync("/proc")
      .filter((e) => /^\d+$/.test(e))
      .map(Number)
      .sort((a, b) => a - b);
  } catch (err) {
    failures.push(fsError("/proc", "cannot list processes", err));
    return [];
  }
}

/**
 * openSighting opens the first of its paths (pins, then processes) that still leads to the same
 * namespace: a pin may have been removed or replaced, a process may have exited, or its pid been
 * reused by a process elsewhere. A namespace with no live path left is gone: the failure of its
 * last pin is recorded (vanished, or what the pin is now), a process that exited is not.
 */
function openSighting(s: Sighting, failures: FailureSink): NetNS | undefined {
  let failure: NetnsError | undefined;
  for (const [path, pid] of s.paths) {
    try {
      const ns = NetNS.open(path, s.names[0], pid);
      if (ns.dev === s.dev && ns.ino === s.ino) return ns;
      ns.close();
    } catch (err) {
      if (!(err instanceof NetnsError)) throw err;
      if (pid === undefined || !(err instanceof NetnsNotFoundError)) failure = err;
    }
  }
  if (failure) failures.push(failure);
  return undefined;
}

/** A namespace found pinned in a directory. */
export interface PinnedNetns {
  /** The file name: the namespace's name (labels in socket results use it). */
  name: string;
  /** The pin's full path. */
  path: string;
  /** What names it, for results and for reopening it later. */
  ref: NetnsRef;
  /** An open handle, lent until the loop moves on. */
  netns: NetNS;
}

/**
 * allNetns iterates the namespaces pinned in `options.netnsDirs`, in directory order then name order,
 * each namespace once even when pinned under several paths (the first path wins). An unreadable
 * directory or an entry that is not a namespace becomes a NamespaceFailure on `failures`, one removed
 * while iterating a NamespaceNote on `notes`, and the walk goes on.
 *
 * @example
 * const all = allNetns({ netnsDirs: ["/run/netns", "/var/run/cilium/netns"] });
 * for (const { name, netns } of all) console.log(name, netns.id);
 * for (const { netns, error } of all.failures) console.error(netns, error.message);
 */
export function allNetns(options: Pick<WalkOptions, "netnsDirs"> = {}): NetnsIteration<PinnedNetns> {
  return new NetnsIteration(function* (failures) {
    for (const e of walk({ netnsDirs: options.netnsDirs, discover: false }, failures))
      yield { name: e.names[0]!, path: e.path, ref: e.ref, netns: e.netns };
  });
}

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
  /** What names it, for results and for reopening it later. */
  ref: NetnsRef;
  /** An open handle, lent until the loop moves on. */
  netns: NetNS;
}

/**
 * discoverNetns finds the namespaces pinned in `options.netnsDirs` (default DEFAULT_NETNS_DIRS) and those of
 * every process in /proc, with the pids in each and its pinned names, each once. Processes that
 * exit meanwhile, or whose namespace may not be inspected (EACCES without CAP_SYS_PTRACE), are
 * passed over on `notes`; other failures (a bad pin) are recorded on `failures` as NamespaceFailures.
 */
export function discoverNetns(options: Pick<WalkOptions, "netnsDirs"> = {}): NetnsIteration<DiscoveredNetns> {
  return new NetnsIteration(function* (failures) {
    for (const e of walk({ netnsDirs: options.netnsDirs, discover: true }, failures))
      yield { name: e.names[0], names: e.names, pids: e.pids, path: e.path, ref: e.ref, netns: e.netns };
  });
}
