/**
 * NetNS: an open file descriptor of a network namespace file (/proc/PID/ns/net, or a bind mount of
 * one). Holding it keeps the namespace alive; setns(2) takes its descriptor.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  type Stats,
  statfsSync,
  statSync,
} from "node:fs";
import { constants as os } from "node:os";
import { QueryError } from "../options/index.js";
import { MisuseError, type SysError } from "../sys/errors.js";
import { CLONE_NEWNET, ioctlInt, NS_GET_NSTYPE } from "../sys/index.js";
import { fsError, NetnsError, NotANetnsError, type NotANetnsKind } from "./errors.js";
import type { NetnsRef } from "./ref.js";

// O_PATH (asm-generic/fcntl.h): a descriptor that names a file without opening it, so a device's
// open handler never runs and a FIFO never blocks. libuv adds O_CLOEXEC.
const O_PATH = 0o10000000;
// NSFS_MAGIC (linux/magic.h): the file system every namespace file lives on.
const NSFS_MAGIC = 0x6e736673;
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
 * What a file is when it cannot be a namespace file, judged from its stat alone (nothing opened):
 * nsfs files are regular files on the nsfs file system.
 */
export function notANamespace(st: Stats, fsType: () => number): NotANetnsKind | undefined {
  if (st.isDirectory()) return "directory";
  if (!st.isFile()) return "special-file";
  if (fsType() !== NSFS_MAGIC) return "plain-file";
  return undefined;
}

/**
 * The error for a path that cannot be looked at: a dangling symlink is named as such (ENOENT alone
 * would read as "vanished"), anything else as fsError says.
 */
export function lookError(label: string, path: string, what: string, err: unknown): NetnsError {
  const e = fsError(label, what, err);
  if (e.cause?.code !== "ENOENT") return e;
  try {
    if (lstatSync(path).isSymbolicLink()) return new NotANetnsError(label, "dangling-symlink");
  } catch {
    // Gone altogether: ENOENT stands.
  }
  return e;
}

let nsfs: number | null | undefined;

/**
 * st_dev of the nsfs file system (one superblock holds every namespace file), from this process's
 * own namespace file: a file on that device is on nsfs, with no statfs to ask. Null where that
 * file cannot be looked at (then statfs tells).
 */
function nsfsDevice(): number | null {
  if (nsfs === undefined) {
    try {
      nsfs = statSync("/proc/self/ns/net").dev;
    } catch {
      nsfs = null;
    }
  }
  return nsfs;
}

/**
 * The namespace kind of an open nsfs file, through ioctl(NS_GET_NSTYPE) (linux/nsfs.h): undefined
 * for a network namespace, else what it is. (readlink of /proc/self/fd/N is no test: for a pinned
 * namespace it reads the mount point's path, not "net:[ino]".)
 */
function otherKind(fd: number): string | undefined {
  let type: number;
  try {
    type = ioctlInt(fd, NS_GET_NSTYPE);
  } catch (err) {
    if ((err as SysError).errno === ENOTTY) return "plain file";
    throw err;
  }
  if (type === CLONE_NEWNET) return undefined;
  return NS_KINDS.get(type) ?? `0x${type.toString(16)}`;
}

/** What an opener knows about the namespace besides its path. */
interface Origin {
  /** The path to record; undefined for a thread's own namespace (recorded as /proc/PID/fd/FD). */
  path: string | undefined;
  name?: string | undefined;
  pid?: number | undefined;
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
  /** The process it was found through (/proc/PID/ns/net), when it was. */
  readonly pid: number | undefined;
  /** Whether `path` is our own /proc/PID/fd/FD, which dies with the descriptor. */
  readonly #pathIsFd: boolean;

  /** Use the static openers; the constructor only records what they checked. */
  private constructor(fd: number, st: { readonly dev: number; readonly ino: number }, origin: Origin) {
    this.#fd = fd;
    this.#pathIsFd = origin.path === undefined;
    this.dev = st.dev;
    this.ino = st.ino;
    this.path = origin.path ?? `/proc/${process.pid}/fd/${fd}`;
    this.name = origin.name;
    this.pid = origin.pid;
  }

  /**
   * openNetns opens `path` and checks that it is a network namespace. The caller owns the handle.
   * Throws NetnsNotFoundError (no such file), NotANetnsError (any other file), NetnsError (other
   * failures, e.g. EACCES on another user's /proc/PID/ns/net).
   */
  static open(path: string, name?: string, pid?: number): NetNS {
    return NetNS.#openAs(path, { path, name, pid });
  }

  /**
   * openThread opens the calling thread's network namespace (/proc/thread-self/ns/net). That path
   * names whatever namespace the thread is in later, so the handle's `path` is /proc/PID/fd/FD
   * instead: valid, for any process, while the handle is open. The caller owns the handle.
   */
  static openThread(): NetNS {
    return NetNS.#openAs("/proc/thread-self/ns/net", { path: undefined });
  }

  /**
   * Open `source` and record it as `origin` says. The file is inspected before it is opened: an
   * O_PATH descriptor names it, its stat and file system say whether it can be a namespace file, and
   * only then is that very file (through /proc/self/fd/N, so a swap in between cannot bite) opened.
   */
  static #openAs(source: string, origin: Origin): NetNS {
    const label = origin.name ?? origin.path ?? source;
    let opened: { fd: number; st: Stats };
    try {
      opened = NetNS.#openChecked(source, label);
    } catch (err) {
      if (err instanceof NetnsError) throw err;
      throw lookError(label, source, "cannot open", err);
    }
    const { fd, st } = opened;
    try {
      const other = otherKind(fd);
      if (other === "plain file") throw new NotANetnsError(label, "plain-file");
      if (other) throw new NotANetnsError(label, "namespace", `a ${other} namespace`);
      return new NetNS(fd, st, origin);
    } catch (err) {
      closeSync(fd);
      if (err instanceof NetnsError) throw err;
      throw fsError(label, "cannot inspect", err);
    }
  }

  /**
   * Open `source` for reading once its O_PATH descriptor shows a namespace file; throws otherwise.
   * The stat is the opened file's: reopening through /proc/self/fd/N opens the very file the
   * O_PATH descriptor holds.
   */
  static #openChecked(source: string, label: string): { fd: number; st: Stats } {
    const named = openSync(source, O_PATH);
    try {
      const self = `/proc/self/fd/${named}`;
      const st = fstatSync(named);
      const not = notANamespace(st, () => (st.dev === nsfsDevice() ? NSFS_MAGIC : statfsSync(self).type));
      if (not) throw new NotANetnsError(label, not);
      return { fd: openSync(self, constants.O_RDONLY | constants.O_NOCTTY), st };
    } finally {
      closeSync(named);
    }
  }

  /**
   * Check that `value`, which passes for a NetNS, is a handle one of its openers made and that it
   * is still open: throws QueryError naming `field` for a forged one (Object.create(NetNS.prototype)
   * has none of a handle's state), MisuseError for one closed before the call.
   */
  static checkHandle(value: NetNS, field: string): void {
    if (!(#fd in value))
      throw new QueryError(
        field,
        "(a forged NetNS)",
        "expected a handle NetNS's openers made (currentNetns, fromName, fromPath, fromPid, create)",
      );
    if (value.#fd < 0)
      throw new MisuseError(`${field}: the NetNS handle ${value.label} was closed before the call`);
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
   * dup makes a second, independent handle of the same namespace, with the same path and name; the
   * caller owns it. Use it to keep a namespace an iteration lends out. The open file is opened
   * again through /proc/self/fd/N, nothing checked again (it was when this handle was opened);
   * through fs like every handle's, which a worker thread's fs tracks. Throws NetnsError (EMFILE:
   * out of descriptors).
   */
  dup(): NetNS {
    let fd: number;
    try {
      fd = openSync(`/proc/self/fd/${this.fd}`, constants.O_RDONLY | constants.O_NOCTTY);
    } catch (err) {
      throw fsError(this.label, "cannot keep", err);
    }
    return new NetNS(fd, this, {
      path: this.#pathIsFd ? undefined : this.path,
      name: this.name,
      pid: this.pid,
    });
  }

  /**
   * The reference that names this namespace after the handle is closed, for reopenNetns: its
   * identity and the pin, path or process that lead to it — never our own /proc/PID/fd/FD, which a
   * later descriptor may reuse. A thread's own namespace is reached again through this process.
   */
  get ref(): NetnsRef {
    const ref: NetnsRef = {
      label: this.#pathIsFd ? `net:[${this.ino}]` : this.label,
      dev: this.dev,
      ino: this.ino,
    };
    if (this.name !== undefined) ref.name = this.name;
    if (!this.#pathIsFd) ref.path = this.path;
    const pid = this.pid ?? (this.#pathIsFd ? process.pid : undefined);
    if (pid !== undefined) ref.pid = pid;
    return ref;
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
