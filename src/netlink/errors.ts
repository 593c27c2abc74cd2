import { describeErrno, errnoName, SockdiagError, SysError, sockdiagError } from "../sys/errors.js";

/**
 * NetlinkError is an error the kernel answered in an NLMSG_ERROR message (or in NLMSG_DONE's
 * status): the request reached the kernel, which refused it. Distinct from a SysError, where the
 * system call itself failed. `code` is the errno name the kernel answered, e.g. "ENOENT".
 */
export class NetlinkError extends sockdiagError<"NetlinkError", string>("NetlinkError", "") {
  declare readonly errno: number;
  /** Sequence number of the request the kernel refused. */
  declare readonly seq: number;

  constructor(op: string, errno: number, seq: number) {
    const code = errnoName(errno);
    super(`${op}: kernel answered ${code} (${describeErrno(errno)})`, { errno, code, seq });
  }
}

/** NetlinkProtocolError: the kernel's answer broke the netlink rules (truncated, malformed, wrong sender). */
export class NetlinkProtocolError extends sockdiagError(
  "NetlinkProtocolError",
  "ERR_SOCKDIAG_NETLINK_PROTOCOL",
) {}

/** NetlinkTimeoutError: no answer within the connection's receive timeout (SO_RCVTIMEO). */
export class NetlinkTimeoutError extends sockdiagError(
  "NetlinkTimeoutError",
  "ERR_SOCKDIAG_NETLINK_TIMEOUT",
) {
  declare readonly timeoutMs: number;
  constructor(op: string, timeoutMs: number) {
    super(`${op}: no answer from the kernel within ${timeoutMs} ms`, { timeoutMs });
  }
}

export { SockdiagError, SysError };

/**
 * DecodeError: bytes that do not hold what their layout says (too short, a length field pointing
 * past the end). Every decoder in sockdiag reports malformed input with this type and nothing else.
 */
export class DecodeError extends sockdiagError("DecodeError", "ERR_SOCKDIAG_DECODE") {
  /** The struct or attribute being decoded, e.g. "inet_diag_msg". */
  declare readonly what: string;
  /** Byte offset in the buffer where decoding failed. */
  declare readonly offset: number;

  constructor(what: string, offset: number, detail: string) {
    super(`malformed ${what} at byte ${offset}: ${detail}`, { what, offset });
  }
}
