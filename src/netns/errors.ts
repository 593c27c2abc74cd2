/**
 * The errors of the namespace layer. Every failure names the namespace (by name or path) and, when
 * the OS refused, carries the SysError (or the kernel's NetlinkError) as `cause`. Two of them are
 * fatal: NetnsRestoreError (the thread could not go back to its namespace) and NetnsPoisonedError
 * (every call after that).
 */
import { constants } from "node:os";
import type { NetlinkError } from "../netlink/index.js";
import { Errno, SysError, sockdiagError } from "../sys/errors.js";

/** What the OS or the kernel answered when a namespace operation failed. */
export type NetnsCause = SysError | NetlinkError;

/**
 * capabilityHint says which privilege was missing for a refused call, since "EPERM" alone does not:
 * setns(2), unshare(2) and mount(2) check CAP_SYS_ADMIN; opening /proc/PID/ns/net checks ptrace
 * read access to PID (fs/proc/namespaces.c, proc_ns_get_link -> ptrace_may_access).
 */
function capabilityHint(cause: NetnsCause): string {
  if (!(cause instanceof SysError)) return "";
  if (cause.errno === Errno.EPERM) return " (needs CAP_SYS_ADMIN)";
  if (cause.errno === Errno.EACCES && cause.syscall === "open") {
    return " (needs CAP_SYS_PTRACE, or the same user as the process that owns it)";
  }
  return "";
}

/**
 * NetnsError is a failed operation on one network namespace. `netns` is the name or path the caller
 * gave (a directory for a directory that could not be read); `cause` is the OS error, if any.
 */
export class NetnsError extends sockdiagError<string, string>("NetnsError", "ERR_SOCKDIAG_NETNS") {
  /** The namespace (name or path) the operation was about. */
  declare readonly netns: string;
  /** The system call or kernel answer that failed, when there was one. */
  declare readonly cause: NetnsCause | undefined;

  /** `fields`: a subclass's own typed fields. */
  constructor(netns: string, what: string, cause?: NetnsCause, fields?: object) {
    const why = cause ? `: ${cause.message}${capabilityHint(cause)}` : "";
    super(`netns ${JSON.stringify(netns)}: ${what}${why}`, { ...fields, netns }, cause);
  }
}

/** InvalidNetnsNameError: a namespace name that cannot name a file in the pin directory. Nothing was touched. */
export class InvalidNetnsNameError extends NetnsError {
  override readonly name = "InvalidNetnsNameError";
  override readonly code = "ERR_SOCKDIAG_NETNS_INVALID_NAME";
}

/** NetnsNotFoundError: no namespace file at that name or path (ENOENT), or no such process. */
export class NetnsNotFoundError extends NetnsError {
  override readonly name: string = "NetnsNotFoundError";
  override readonly code: string = "ERR_SOCKDIAG_NETNS_NOT_FOUND";
}

/** PinDirectoryNotFoundError: a pin directory to search does not exist (a NetnsNotFoundError). */
export class PinDirectoryNotFoundError extends NetnsNotFoundError {
  override readonly name = "PinDirectoryNotFoundError";
  override readonly code = "ERR_SOCKDIAG_PIN_DIRECTORY_NOT_FOUND";
}

/**
 * Whether `err` says a namespace went away between being found and being opened (its pin was
 * removed, its process exited): it had no sockets left, so this is worth reporting but no failure.
 */
export function isVanishedNetns(err: unknown): boolean {
  return err instanceof NetnsNotFoundError && !(err instanceof PinDirectoryNotFoundError);
}

/** NetnsExistsError: add() found a file of that name already in the pin directory (EEXIST). */
export class NetnsExistsError extends NetnsError {
  override readonly name = "NetnsExistsError";
  override readonly code = "ERR_SOCKDIAG_NETNS_EXISTS";
}

/** What a file that is not a network namespace is instead. */
export type NotANetnsKind = "plain-file" | "directory" | "special-file" | "dangling-symlink" | "namespace";

const KIND_TEXT: Record<NotANetnsKind, string> = {
  "plain-file": "a plain file",
  directory: "a directory",
  "special-file": "a special file",
  "dangling-symlink": "a dangling symlink",
  namespace: "another kind of namespace",
};

/**
 * NotANetnsError: the path is not a network namespace (a regular file, a directory, a device or
 * FIFO, a symlink to nothing, another kind of namespace). `kind` says which; `actual` says it in words.
 */
export class NotANetnsError extends NetnsError {
  override readonly name = "NotANetnsError";
  override readonly code = "ERR_SOCKDIAG_NOT_A_NETNS";
  declare readonly kind: NotANetnsKind;
  /** What it is instead: "a plain file", "a directory", "a special file", "a mnt namespace", ... */
  declare readonly actual: string;

  constructor(netns: string, kind: NotANetnsKind, actual = KIND_TEXT[kind]) {
    super(netns, `not a network namespace: it is ${actual}`, undefined, { kind, actual });
  }
}

/**
 * NetnsUnreadableError: another process's namespace this process may not look at (EACCES on
 * /proc/PID/ns/net without CAP_SYS_PTRACE, e.g. a more privileged pid 1).
 */
export class NetnsUnreadableError extends NetnsError {
  override readonly name = "NetnsUnreadableError";
}

/**
 * Why a namespace met while walking was passed over without that being a failure: it vanished
 * between being found and being opened; it belongs to a process we may not inspect; its pin is a
 * plain file (what `ip netns add` leaves for an instant, or a failed add leaves behind); its pin is
 * a symlink to nothing.
 */
export type NetnsNote = "vanished" | "unreadable" | "plain-file" | "dangling-symlink";

/** The note for a namespace-walk error that is worth telling but no failure; undefined for a failure. */
export function netnsNote(err: unknown): NetnsNote | undefined {
  if (isVanishedNetns(err)) return "vanished";
  if (err instanceof NetnsUnreadableError) return "unreadable";
  if (err instanceof NotANetnsError && (err.kind === "plain-file" || err.kind === "dangling-symlink"))
    return err.kind;
  return undefined;
}

/**
 * NetnsAsyncCallbackError: runIn() was given a function that returned a Promise (or thenable). Only
 * its synchronous part ran inside the namespace; the rest would run wherever the thread is later.
 * The thread was restored before this was thrown.
 */
export class NetnsAsyncCallbackError extends NetnsError {
  override readonly name = "NetnsAsyncCallbackError";
  override readonly code = "ERR_SOCKDIAG_NETNS_ASYNC_CALLBACK";

  constructor(netns: string) {
    super(netns, "runIn() needs a synchronous function, this one returned a Promise");
  }
}

/**
 * NetnsRestoreError is fatal: after running in `entered`, the thread could not go back to `netns`
 * and is still in the wrong namespace. The namespace layer is poisoned from then on (every later
 * operation throws NetnsPoisonedError); the process should exit.
 */
export class NetnsRestoreError extends NetnsError {
  override readonly name = "NetnsRestoreError";
  override readonly code = "ERR_SOCKDIAG_NETNS_RESTORE";
  /** The namespace the thread is stuck in. */
  declare readonly entered: string;

  constructor(netns: string, entered: string, cause: NetnsCause | undefined, detail?: string) {
    const what = `FATAL: cannot return the thread here from ${JSON.stringify(entered)}${detail ?? ""}`;
    super(netns, what, cause, { entered });
  }
}

/** NetnsPoisonedError: a namespace operation after a NetnsRestoreError, refused; `restoreError` is that error. */
export class NetnsPoisonedError extends NetnsError {
  override readonly name = "NetnsPoisonedError";
  override readonly code = "ERR_SOCKDIAG_NETNS_POISONED";
  /** The failed restore that poisoned the layer. */
  declare readonly restoreError: NetnsRestoreError;

  constructor(restoreError: NetnsRestoreError) {
    const what = `namespace operations are disabled since a failed restore left this thread in the wrong namespace (${restoreError.message})`;
    super(restoreError.netns, what, undefined, { restoreError });
  }
}

/**
 * sysErrorOf turns an error thrown by node:fs into a SysError (node reports libuv's negative errno
 * and a code); a SysError passes through. Anything else is not an OS error and is rethrown.
 */
export function sysErrorOf(err: unknown, detail?: string): SysError {
  if (err instanceof SysError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e instanceof Error && typeof e.code === "string" && typeof e.errno === "number") {
    const errno = (constants.errno as Record<string, number>)[e.code] ?? Math.abs(e.errno);
    return new SysError(e.syscall ?? "fs", errno, detail ?? e.path);
  }
  throw err;
}

/** fsError wraps a node:fs failure on `netns` as NetnsNotFoundError (ENOENT, ESRCH) or NetnsError. */
export function fsError(netns: string, what: string, err: unknown): NetnsError {
  const cause = sysErrorOf(err);
  if (cause.errno === Errno.ENOENT || cause.code === "ESRCH")
    return new NetnsNotFoundError(netns, what, cause);
  return new NetnsError(netns, what, cause);
}

/**
 * Whether `err` means the calling thread may be in the wrong network namespace: no later result
 * could be trusted, so it must end the whole operation instead of becoming one namespace's error.
 */
export function isFatalNetnsError(err: unknown): boolean {
  return err instanceof NetnsRestoreError || err instanceof NetnsPoisonedError;
}
