/**
 * The errors the sockets library throws. Each names what it is about (a protocol, a query field,
 * a capability) so that the CLI can print it as is and map it to an exit code in one place.
 */
import type { Protocol, Socket } from "../diag/socket.js";
import { SockdiagError } from "../sys/errors.js";
import type { NamespaceFailure } from "./targets.js";

/** QueryError: the query itself is wrong (unknown protocol, state or extension name). Nothing was sent. */
export class QueryError extends SockdiagError {
  override readonly name = "QueryError";
  override readonly code = "ERR_SOCKDIAG_QUERY";
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
export class UnsupportedProtocolError extends SockdiagError {
  override readonly name = "UnsupportedProtocolError";
  override readonly code = "ERR_SOCKDIAG_UNSUPPORTED_PROTOCOL";
  readonly protocol: Protocol;
  /** `cause`: the kernel's answer (NetlinkError ENOENT). */
  constructor(protocol: Protocol, module: string, cause?: Error) {
    super(`protocol ${protocol} is not supported by this kernel (no ${module} sock_diag handler)`, { cause });
    this.protocol = protocol;
  }
}

/**
 * NamespacesFailedError: listSockets with `netns: "all"` could not list some namespaces. `sockets`
 * holds what the others listed, `failures` each namespace that failed and why.
 */
export class NamespacesFailedError extends SockdiagError {
  override readonly name = "NamespacesFailedError";
  override readonly code = "ERR_SOCKDIAG_NAMESPACES_FAILED";
  constructor(
    readonly sockets: readonly Socket[],
    readonly failures: readonly NamespaceFailure[],
  ) {
    const real = failures.filter((f) => !f.note);
    super(
      `${real.length} namespace${real.length === 1 ? "" : "s"} could not be listed: ${real
        .slice(0, 3)
        .map((f) => `${f.netns}: ${f.error.message}`)
        .join("; ")}${real.length > 3 ? "; ..." : ""}`,
    );
  }
}

/** What a long call watches to stop early: an AbortSignal, or anything with its `aborted` flag. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
}

/**
 * AbortError: the caller's signal aborted a call. Requests already sent were finished first; `report`
 * says what was done before the stop (for a destroy, every socket destroyed so far; sockets found
 * but not attempted are counted as skipped), and `cause` is the signal's reason.
 */
export class AbortError<Report = unknown> extends SockdiagError {
  override readonly name = "AbortError";
  override readonly code = "ABORT_ERR";
  report: Report | undefined;

  constructor(signal?: AbortSignalLike, report?: Report) {
    super("the operation was aborted", signal?.reason === undefined ? undefined : { cause: signal.reason });
    this.report = report;
  }
}

/** Throw AbortError when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignalLike | undefined): void {
  if (signal?.aborted) throw new AbortError(signal);
}
