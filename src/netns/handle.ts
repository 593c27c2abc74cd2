/**
 * NetNS: an open file descriptor of a network namespace file (/proc/PID/ns/net, or a bind mount of
 * one). Holding it keeps the namespace alive; setns(2) takes its descriptor.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync } from "node:fs";
import { NetnsError, NotANetnsError, fsError } from "./errors.js";

// O_NONBLOCK and O_NOCTTY: a FIFO or a terminal dropped into a pin directory must not block or
// become our controlling terminal when we open it to find out what it is. libuv adds O_CLOEXEC.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

// readlink(/proc/self/fd/N) of a namespace file reads "net:[4026531833]" (fs/nsfs.c, ns_dname).
const NET_NS_LINK = /^net:\[(\d+)\]$/;

/**
 * NetNS is an open network namespace. The handle owns its descriptor: close it (or declare it with
 * `using`) when done. Two handles name the same namespace when `equals` says so: same st_dev and
 * st_ino of the namespace file (all nsfs files share one st_dev; the inode is the namespace id).
 * Create one with current(), fromPath(), fromName(), fromPid(), create() or add().
 */
export class NetNS implements Disposable {
  /** st_dev of the namespace file (the nsfs device). */
  readonly dev: number;
  /** st_ino of the namespace file: the namespace's id, as in "net:[ino]" and `ip netns identify`. */
  readonly ino: number;
  /** The path it was opened from. */
  readonly path: string;
  /** The pinned name (file name in a pin directory), when it was found by name. */
  readonly name: string | undefined;
  #fd: number;

  /** Use openNetns(); the constructor only records what it checked. */
  private constructor(fd: number, dev: number, ino: number, path: string, name: string | undefined) {
    this.#fd = fd;
    this.dev = dev;
    this.ino = ino;
    this.path = path;
    this.name = name;
  }

  /**
   * openNetns opens `path` and checks that it is a network namespace. The caller owns the handle.
   * Throws NetnsNotFoundError (no such file), NotANetnsError (any other file), NetnsError (other
   * failures, e.g. EACCES on another user's /proc/PID/ns/net).
   */
  static open(path: string, name?: string): NetNS {
    return NetNS.#openAs(path, path, name);
  }

  /** Open `source` and record it as `path` (dup() opens /proc/self/fd/N but keeps the original path). */
  static #openAs(source: string, path: string, name: string | undefined): NetNS {
    const label = name ?? path;
    let fd: number;
    try {
      fd = openSync(source, OPEN_FLAGS);
    } catch (err) {
      throw fsError(label, "cannot open", err);
    }
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      if (!NET_NS_LINK.test(link)) throw new NotANetnsError(label, link);
      const st = fstatSync(fd);
      return new NetNS(fd, st.dev, st.ino, path, name);
    } catch (err) {
      closeSync(fd);
      if (err instanceof NetnsError) throw err;
      throw fsError(label, "cannot inspect", err);
    }
  }

  /** The descriptor, for setns(2) or a /proc/self/fd/N path. Throws NetnsError after close(). */
  get fd(): number {
    if (this.#fd < 0) throw new NetnsError(this.label, "handle used after close()");
    return this.#fd;
  }

  /** The namespace's stable id: its inode number (unique among live namespaces). */
  get id(): number {
    return this.ino;
  }

  /** The name if it has one, else the path: what messages and socket results call it. */
  get label(): string {
    return this.name ?? this.path;
  }

  /** Whether close() was called. */
  get closed(): boolean {
    return this.#fd < 0;
  }

  /** Whether `other` is the same namespace (same st_dev and st_ino), whichever path opened each. */
  equals(other: NetNS): boolean {
    return this.ino === other.ino && this.dev === other.dev;
  }

  /**
   * dup opens a second, independent handle of the same namespace (through /proc/self/fd/N), with the
   * same path and name; the caller owns it. Use it to keep a namespace an iteration lends out.
   */
  dup(): NetNS {
    return NetNS.#openAs(`/proc/self/fd/${this.fd}`, this.path, this.name);
  }

  /** Close the descriptor. Idempotent. The namespace lives on while anything else holds it. */
  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    closeSync(fd);
  }

  /** Same as close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** "net:[ino] (label)", for messages. */
  toString(): string {
    return `net:[${this.ino}] (${this.label})`;
  }
}
