/**
 * Moving the calling thread into a namespace and back. setns(2) moves only the calling thread, and
 * Node runs our JavaScript on one thread, so: enter, run a synchronous function, restore in
 * `finally` — no other JavaScript can run in between. A failed restore poisons the layer: the
 * process must not go on quietly in the wrong namespace (Go's netns code kills the thread instead).
 */
import { type NetlinkConnection, type NetlinkOptions, NetlinkSocket } from "../netlink/index.js";
import { SysError } from "../sys/errors.js";
import { CLONE_NEWNET, setns, unshare } from "../sys/index.js";
import {
  NetnsAsyncCallbackError,
  NetnsError,
  NetnsPoisonedError,
  NetnsRestoreError,
  sysErrorOf,
} from "./errors.js";
import { NetNS } from "./handle.js";
import type { Target } from "./selection.js";

/** The two system calls that move a thread, injectable so tests can make them fail. */
export interface ThreadSyscalls {
  /** setns(2). Throws SysError; on failure the thread has not moved. */
  setns(fd: number, nstype: number): void;
  /** unshare(2). Throws SysError; on failure the thread has not moved. */
  unshare(flags: number): void;
}

/**
 * ThreadNetns moves one thread (the one that calls it) between network namespaces under the restore
 * discipline. Its state: a handle of the thread's original namespace (opened on first use, kept open
 * for the thread's life), the namespace a running callback is in (for nesting), and the poison set
 * by a failed restore. The module keeps one instance, `threadNetns`; tests build their own with
 * failing syscalls.
 */
export class ThreadNetns {
  readonly #sys: ThreadSyscalls;
  #original: NetNS | undefined;
  #inside: NetNS | undefined;
  #poison: NetnsRestoreError | undefined;

  constructor(sys: ThreadSyscalls = { setns, unshare }) {
    this.#sys = sys;
  }

  /**
   * Whether a runIn callback is running: the thread is in another namespace than its own, and so
   * would be any thread it started now.
   */
  get away(): boolean {
    return this.#inside !== undefined;
  }

  /** The failed restore that poisoned this instance, if any. */
  get poison(): NetnsRestoreError | undefined {
    return this.#poison;
  }

  /** Throws NetnsPoisonedError if a restore has failed: the thread may be in the wrong namespace. */
  assertUsable(): void {
    if (this.#poison) throw new NetnsPoisonedError(this.#poison);
  }

  /**
   * runIn runs `fn` with the calling thread in `ns` and returns its result; the thread is back where
   * it was (the enclosing runIn's namespace, or its own) before runIn returns or throws. `fn` must be
   * synchronous: one that returns a Promise gets NetnsAsyncCallbackError, after the restore. Sockets
   * created in `fn` stay in `ns` for life. Throws NetnsError if `ns` cannot be entered (the thread
   * did not move), whatever `fn` throws, and NetnsRestoreError if the thread could not come back.
   */
  runIn<T>(ns: NetNS, fn: () => T): T {
    const result = this.#visit(
      ns.label,
      () => this.#sys.setns(ns.fd, CLONE_NEWNET),
      () => {
        this.#inside = ns;
        return fn();
      },
    );
    if (isThenable(result)) throw new NetnsAsyncCallbackError(ns.label);
    return result;
  }

  /**
   * unshareNew makes a new, unpinned network namespace (unshare(CLONE_NEWNET) on the calling thread)
   * and returns a handle of it, the thread back where it was. The namespace lives while the handle or
   * anything else holds it; the caller owns the handle. Its only interface is `lo`, down.
   */
  unshareNew(): NetNS {
    return this.#visit(
      "new namespace",
      () => this.#sys.unshare(CLONE_NEWNET),
      () => NetNS.openThread(),
    );
  }

  /** Enter with `move` (which leaves the thread in place when it throws), run `body`, come back. */
  #visit<T>(label: string, move: () => void, body: () => T): T {
    this.assertUsable();
    const outer = this.#inside;
    const back = outer ?? this.#originalHandle();
    try {
      move();
    } catch (err) {
      throw new NetnsError(label, "cannot enter", sysErrorOf(err));
    }
    try {
      return body();
    } finally {
      this.#inside = outer;
      this.#restore(back, label);
    }
  }

  #restore(back: NetNS, from: string): void {
    try {
      this.#sys.setns(back.fd, CLONE_NEWNET);
    } catch (err) {
      // Whatever failed (the call, or a handle closed by the callback), the thread is not back.
      const to = back === this.#original ? `original ${back}` : back.label;
      this.#poison =
        err instanceof SysError
          ? new NetnsRestoreError(to, from, err)
          : new NetnsRestoreError(
              to,
              from,
              undefined,
              ` (${err instanceof Error ? err.message : String(err)})`,
            );
      throw this.#poison;
    }
  }

  #originalHandle(): NetNS {
    this.#original ??= NetNS.openThread();
    return this.#original;
  }
}

function isThenable(value: unknown): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * The calling thread's mover. Module state, one per thread (a worker thread loads its own copy of
 * this module): the cached handle of the thread's original namespace and the poison flag live here.
 */
export const threadNetns = new ThreadNetns();

/** runIn runs `fn` inside `ns` on the calling thread; see ThreadNetns.runIn. */
export function runIn<T>(ns: NetNS, fn: () => T): T {
  return threadNetns.runIn(ns, fn);
}

/**
 * openNetlinkIn opens a netlink socket of `protocol` that lives in `ns` (in the calling thread's
 * namespace when `ns` is undefined); the thread never stays in `ns`. The caller owns the socket.
 * Throws NetnsError / NetnsRestoreError as runIn, SysError as NetlinkSocket.open.
 */
export function openNetlinkIn(
  ns: NetNS | undefined,
  protocol: number,
  options?: NetlinkOptions,
): NetlinkSocket {
  return inNetns(ns, () => NetlinkSocket.open(protocol, options));
}

/**
 * Opens the netlink connections of `protocol` that a scan of `target` uses, in place of entering
 * the namespace: a test's fake kernel (or a real socket it wraps). A scan given one reads none of
 * the namespace's counters (the connection answers for the namespace); without one, it opens real
 * sockets inside the namespace (openNetlinkIn).
 */
export type NetlinkOpener = (protocol: number, target: Target) => NetlinkConnection;

/** runIn, or `fn` on the calling thread as it is when `ns` is undefined (the caller's own). */
export function inNetns<T>(ns: NetNS | undefined, fn: () => T): T {
  if (ns) return threadNetns.runIn(ns, fn);
  threadNetns.assertUsable();
  return fn();
}
