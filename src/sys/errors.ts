import { constants } from "node:os";

const errnoNames = new Map<number, string>();
for (const [name, value] of Object.entries(constants.errno)) {
  if (!errnoNames.has(value)) errnoNames.set(value, name);
}
// Where Linux has two names for one number, use the one the kernel's sources and ss use.
errnoNames.set(constants.errno.EOPNOTSUPP, "EOPNOTSUPP");
errnoNames.set(constants.errno.EAGAIN, "EAGAIN");

/** errnoName returns the symbolic name of an errno number ("EPERM"), or "E<number>" when unknown. */
export function errnoName(errno: number): string {
  return errnoNames.get(errno) ?? `E${errno}`;
}

/** Errno numbers this project tests for by name, from the Linux asm-generic/errno headers. */
export const Errno = {
  EPERM: constants.errno.EPERM,
  ENOENT: constants.errno.ENOENT,
  EINTR: constants.errno.EINTR,
  EAGAIN: constants.errno.EAGAIN,
  EACCES: constants.errno.EACCES,
  EBUSY: constants.errno.EBUSY,
  EINVAL: constants.errno.EINVAL,
  ENOBUFS: constants.errno.ENOBUFS,
  EOPNOTSUPP: constants.errno.EOPNOTSUPP,
  ECONNABORTED: constants.errno.ECONNABORTED,
  EDESTADDRREQ: constants.errno.EDESTADDRREQ,
  ETIMEDOUT: constants.errno.ETIMEDOUT,
  EIO: constants.errno.EIO,
  ENODEV: constants.errno.ENODEV,
  EPROTONOSUPPORT: constants.errno.EPROTONOSUPPORT,
  EAFNOSUPPORT: constants.errno.EAFNOSUPPORT,
  ENOSYS: constants.errno.ENOSYS,
  EMFILE: constants.errno.EMFILE,
  ENFILE: constants.errno.ENFILE,
  ENOMEM: constants.errno.ENOMEM,
} as const;

/**
 * SockdiagError is the base of every error sockdiag throws or reports. `code` is stable: branch on
 * it, never on the message. For a failed system call or a kernel answer it is the errno name
 * ("EPERM", as Node's system errors say); otherwise an "ERR_SOCKDIAG_*" name per kind. `cause`
 * keeps the error underneath, when there is one. Subclasses extend `sockdiagError(name, code)`.
 */
export abstract class SockdiagError extends Error {
  abstract readonly code: string;

  /** What JSON shows of it: name, code and message (an Error's own fields are not enumerable). */
  toJSON(): { name: string; code: string; message: string } {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/**
 * The base class of one kind of SockdiagError, with its `name` and `code` declared once. Its
 * constructor takes the message, the subclass's typed fields (declared with `declare readonly` in
 * the subclass, and set here as own properties, which JSON and the promises API carry), and the
 * `cause`. A field named `code` overrides the fixed one, for errors whose code is an errno name.
 */
export function sockdiagError<const N extends string, const C extends string>(name: N, code: C) {
  abstract class Declared extends SockdiagError {
    override readonly name: N = name;
    override readonly code: C = code;
    constructor(message: string, fields?: object, cause?: unknown) {
      super(message, cause === undefined ? undefined : { cause });
      if (fields) Object.assign(this, fields);
    }
  }
  return Declared;
}

/**
 * ForeignError: an exception that came from outside sockdiag — a caller's callback or collaborator
 * — reported (not thrown) in a result. `cause` is what was thrown.
 */
export class ForeignError extends sockdiagError("ForeignError", "ERR_SOCKDIAG_FOREIGN") {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), undefined, cause);
  }
}

/**
 * MisuseError: sockdiag's own objects used against their rules — a message writer overrun or
 * ended without a start, a connection used after close, a dump begun while another is unread — or
 * an invariant between its parts broken. A bug in the code that called, never the kernel's doing
 * (that is NetlinkProtocolError) nor a caller's bad input (QueryError).
 */
export class MisuseError extends sockdiagError("MisuseError", "ERR_SOCKDIAG_MISUSE") {}

/** What a long call watches to stop early: an AbortSignal, or anything with its `aborted` flag. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
}

/** `err` as a SockdiagError: itself, or wrapped in ForeignError. */
export function asSockdiagError(err: unknown): SockdiagError {
  return err instanceof SockdiagError ? err : new ForeignError(err);
}

/**
 * SysError is a failed system call: which call, and the errno the kernel returned.
 * Every OS failure in sockdiag surfaces as this type (or wraps it), never as a bare number.
 */
export class SysError extends sockdiagError<"SysError", string>("SysError", "") {
  /** The errno number, e.g. 1. */
  declare readonly errno: number;
  /** The system call that failed, e.g. "setns". The errno name ("EPERM") is `code`. */
  declare readonly syscall: string;

  constructor(syscall: string, errno: number, detail?: string) {
    const code = errnoName(errno);
    const what = detail ? `${syscall}(${detail})` : syscall;
    super(`${what} failed: ${code} (${describeErrno(errno)})`, { errno, code, syscall });
  }
}

const descriptions: Record<string, string> = {
  EPERM: "operation not permitted",
  ENOENT: "no such file, directory or socket",
  EACCES: "permission denied",
  EINVAL: "invalid argument",
  EAGAIN: "resource temporarily unavailable",
  EBUSY: "device or resource busy",
  ENOBUFS: "no buffer space available",
  EOPNOTSUPP: "operation not supported",
  EPROTONOSUPPORT: "protocol not supported",
  EAFNOSUPPORT: "address family not supported",
  ECONNABORTED: "connection aborted",
  EDESTADDRREQ: "destination address required",
  EMFILE: "too many open files",
  EBADF: "bad file descriptor",
};

/** describeErrno gives a short human description of an errno, for messages. */
export function describeErrno(errno: number): string {
  return descriptions[errnoName(errno)] ?? `errno ${errno}`;
}
