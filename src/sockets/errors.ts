/**
 * The errors of the sockets library. Each names what it is about (a protocol, a socket) so that the
 * CLI can print it as is and map it to an exit code in one place.
 */
import type { Protocol, Socket } from "../diag/socket.js";
import type { NamespaceFailure } from "../netns/index.js";
import { sockdiagError } from "../sys/errors.js";

/** UnsupportedProtocolError: this kernel has no sock_diag handler for the protocol (module not built or loadable). */
export class UnsupportedProtocolError extends sockdiagError(
  "UnsupportedProtocolError",
  "ERR_SOCKDIAG_UNSUPPORTED_PROTOCOL",
) {
  declare readonly protocol: Protocol;
  /** `cause`: the kernel's answer (NetlinkError ENOENT). */
  constructor(protocol: Protocol, module: string, cause?: Error) {
    const message = `protocol ${protocol} is not supported by this kernel (no ${module} sock_diag handler)`;
    super(message, { protocol }, cause);
  }
}

/**
 * NamespacesFailedError: listSockets with `netns: "all"` could not list some namespaces. `sockets`
 * holds what the others listed, `failures` each namespace that failed and why.
 */
export class NamespacesFailedError extends sockdiagError(
  "NamespacesFailedError",
  "ERR_SOCKDIAG_NAMESPACES_FAILED",
) {
  declare readonly sockets: readonly Socket[];
  declare readonly failures: readonly NamespaceFailure[];
  constructor(sockets: readonly Socket[], failures: readonly NamespaceFailure[]) {
    const named = failures.slice(0, 3).map((f) => `${f.netns}: ${f.error.message}`);
    const s = failures.length === 1 ? "" : "s";
    const more = failures.length > 3 ? "; ..." : "";
    super(`${failures.length} namespace${s} could not be listed: ${named.join("; ")}${more}`, {
      sockets,
      failures,
    });
  }
}

/** DestroyError: the kernel refused to destroy a socket. */
export class DestroyError extends sockdiagError<"DestroyError", string>("DestroyError", "") {
  declare readonly errno: number;
  /** `code` is the errno name the kernel answered, e.g. "EPERM". */
  constructor(errno: number, code: string, message: string) {
    super(`cannot destroy socket: ${code}: ${message}`, { errno, code });
  }
}
