/**
 * NetNS: an open file descriptor of a network namespace file (/proc/PID/ns/net, or a bind mount of
 * one). Holding it keeps the namespace alive; setns(2) takes its descriptor.
 */
import { closeSync, constants, fstatSync, openSync, type Stats } from "node:fs";
import { constants as os } from "node:os";
import type { SysError } from "../sys/errors.js";
import { ioctlInt, NS_GET_NSTYPE } from "../sys/ioctl.js";
import { CLONE_NEWNET } from "../sys/namespace.js";
import { fsError, NetnsError, NotANetnsError } from "./errors.js";

// O_NONBLOCK and O_NOCTTY: a FIFO or a terminal dropped into a pin directory must not block or
// become our controlling terminal when we open it to find out what it is. libuv adds O_CLOEXEC.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const ENOTTY = os.errno.ENOTTY;

// What NS_GET_NSTYPE answers for the other namespace kinds (linux/sched.h), for messages.
const NS_KINDS = new Map<number, string>([
  [0x00000080, "time"],
  [0x00020000, "mnt"],
  [0x02000000, "cgroup"],
  [0x04000000, "uts"],
  [0x08000000, "ipc"],
  [0x10000000, "user"],
  [0x20000000, "pid"],
]);

/**
 * whatIsNot says what an open file is when it is not a network namespace, or undefined when it is
 * one. nsfs files are regular files; ioctl(NS_GET_NSTYPE) (linux/nsfs.h) answers CLONE_NEWNET for a
 * network namespace and ENOTTY for any other regular file. (readlink of /proc/self/fd/N is no
 * test: for a pinned namespace it reads the mount point's path, not "net:[ino]".) Devices and FIFOs
 * are never sent the ioctl.
 */
function whatIsNot(fd: number, st: Stats): string | undefined {
  if (st.isDirectory()) return "a directory";
  if (!st.isFile()) return "a special file";
  let type: number;
  try {
    type = ioctlInt(fd, NS_GET_NSTYPE);
  } catch (err) {
    if ((err as SysError).errno === ENOTTY) return "a plain file";
    throw err;
  }
  if (type === CLONE_NEWNET) return undefined;
  return `a ${NS_KINDS.get(type) ?? `0x${type.toString(16)}`} namespace`;
}

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
  /** Whether `path` is our own /proc/PID/fd/FD, which dies with the descriptor. */
  readonly #pathIsFd: boolean;

  /** Use the static openers; the constructor only records what they checked. */
  private constructor(
    fd: number,
    dev: number,
    ino: number,
    path: string,
    pathIsFd: boolean,
    name: string | undefined,
  ) {
    this.#fd = fd;
    this.#pathIsFd = pathIsFd;
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

  /**
   * openThread opens the calling thread's network namespace (/proc/thread-self/ns/net). That path
   * names whatever namespace the thread is in later, so the handle's `path` is /proc/PID/fd/FD
   * instead: valid, for any process, while the handle is open. The caller owns the handle.
   */
  static openThread(): NetNS {
    return NetNS.#openAs("/proc/thread-self/ns/net", undefined, undefined);
  }

  /**
   * Open `source` and record it as `path`, or, when `path` is undefined, as /proc/PID/fd/FD
   * (dup() opens /proc/self/fd/N but keeps the path of the handle it copies).
   */
  static #openAs(source: string, path: string | undefined, name: string | undefined): NetNS {
    const label = name ?? path ?? source;
    let fd: number;
    try {
      fd = openSync(source, OPEN_FLAGS);
    } catch (err) {
      throw fsError(label, "cannot open", err);
    }
    try {
      const st = fstatSync(fd);
      const not = whatIsNot(fd, st);
      if (not) throw new NotANetnsError(label, not);
      return new NetNS(fd, st.dev, st.ino, path ?? `/proc/${process.pid}/fd/${fd}`, path === undefined, name);
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
    return NetNS.#openAs(`/proc/self/fd/${this.fd}`, this.#pathIsFd ? undefined : this.path, this.name);
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
