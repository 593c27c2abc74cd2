/**
 * allNetns(): every namespace pinned in one or more directories, one at a time. Failures are
 * collected on the iteration object, never thrown, so one bad entry never hides the others.
 */
import { readdirSync } from "node:fs";
import { threadNetns } from "./enter.js";
import { NetnsError, PinDirectoryNotFoundError, sysErrorOf } from "./errors.js";
import { NetNS } from "./handle.js";
import { NETNS_RUN_DIR } from "./pinned.js";

/**
 * NetnsIteration is a re-iterable sequence of namespaces with the errors met so far. Each pass starts
 * a fresh walk and clears `errors`. Handles it yields are lent: each is closed when the loop moves
 * on, breaks or throws — call `netns.dup()` to keep one.
 */
export class NetnsIteration<T> implements Iterable<T> {
  /** Failures met so far in the current pass; readable inside the loop and after it. */
  readonly errors: NetnsError[] = [];
  readonly #walk: (errors: NetnsError[]) => Iterator<T>;

  /** `walk` yields the entries and pushes every failure onto the array it is given. */
  constructor(walk: (errors: NetnsError[]) => Iterator<T>) {
    this.#walk = walk;
  }

  [Symbol.iterator](): Iterator<T> {
    threadNetns.assertUsable();
    this.errors.length = 0;
    return this.#walk(this.errors);
  }
}

/** A namespace found pinned in a directory. */
export interface PinnedNetns {
  /** The file name: the namespace's name (labels in socket results use it). */
  name: string;
  /** The pin's full path. */
  path: string;
  /** An open handle, lent until the loop moves on. */
  netns: NetNS;
}

/** Where allNetns() looks. */
export interface AllNetnsOptions {
  /**
   * Pin directories, searched in order. Default [NETNS_RUN_DIR]. Others in use:
   * /var/run/docker/netns, /var/run/cilium/netns.
   */
  dirs?: readonly string[];
}

/**
 * allNetns iterates the namespaces pinned in `options.dirs`, in directory order then name order,
 * each namespace once even when pinned under several paths (the first path wins). An unreadable
 * directory, an entry that is not a namespace, or one removed while iterating becomes a NetnsError
 * on `errors` and the walk goes on.
 *
 * @example
 * const all = allNetns({ dirs: ["/run/netns", "/var/run/cilium/netns"] });
 * for (const { name, netns } of all) console.log(name, netns.id);
 * for (const err of all.errors) console.error(err.message);
 */
export function allNetns(options: AllNetnsOptions = {}): NetnsIteration<PinnedNetns> {
  const dirs = options.dirs;
  return new NetnsIteration((errors) => openDistinct(pinCandidates(dirs, errors), errors));
}

/** A path to open, with what to call it. */
interface Candidate {
  name: string;
  path: string;
}

/**
 * pinCandidates lists each directory (default: NETNS_RUN_DIR) when the walk reaches it; a failure to
 * list is recorded.
 */
export function* pinCandidates(
  dirs: readonly string[] | undefined,
  errors: NetnsError[],
): Generator<Candidate> {
  for (const dir of dirs ?? [NETNS_RUN_DIR]) {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch (err) {
      // The default directory exists only once something was pinned (ip netns creates it):
      // its absence means "no pins". A directory the caller named must exist.
      if (dirs === undefined && (err as NodeJS.ErrnoException).code === "ENOENT") continue;
      const cause = sysErrorOf(err);
      const Failure = cause.code === "ENOENT" ? PinDirectoryNotFoundError : NetnsError;
      errors.push(new Failure(dir, "cannot read the pin directory", cause));
      continue;
    }
    for (const name of names) yield { name, path: `${dir}/${name}` };
  }
}

/**
 * openDistinct opens each candidate, records those that fail, skips namespaces already yielded,
 * and closes each handle when the consumer asks for the next or stops.
 */
function* openDistinct(candidates: Iterable<Candidate>, errors: NetnsError[]): Generator<PinnedNetns> {
  const seen = new Set<string>();
  for (const { name, path } of candidates) {
    let netns: NetNS;
    try {
      netns = NetNS.open(path, name);
    } catch (err) {
      if (!(err instanceof NetnsError)) throw err;
      errors.push(err);
      continue;
    }
    try {
      const key = `${netns.dev}:${netns.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      yield { name, path, netns };
    } finally {
      netns.close();
    }
  }
}
