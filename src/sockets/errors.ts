/**
 * The errors the sockets library throws. Each names what it is about (a protocol, a query field,
 * a capability) so that the CLI can print it as is and map it to an exit code in one place.
 */
import type { Protocol } from "../diag/socket.js";

/** QueryError: the query itself is wrong (unknown protocol, state or extension name). Nothing was sent. */
export class QueryError extends Error {
  override readonly name = "QueryError";
  /** The query field at fault, e.g. "states". */
  readonly field: string;
  /** The offending value as given. */
  readonly value: string;
  constructor(field: string, value: string, detail: string) {
    super(`invalid ${field} "${value}": ${detail}`);
    this.field = field;
    this.value = value;
  }
}

/** UnsupportedProtocolError: this kernel has no sock_diag handler for the protocol (module not built or loadable). */
export class UnsupportedProtocolError extends Error {
  override readonly name = "UnsupportedProtocolError";
  readonly protocol: Protocol;
  /** `cause`: the kernel's answer (NetlinkError ENOENT). */
  constructor(protocol: Protocol, module: string, cause?: Error) {
    super(`protocol ${protocol} is not supported by this kernel (no ${module} sock_diag handler)`, { cause });
    this.protocol = protocol;
  }
}
