/**
 * The errors the sockets library throws. Each names what it is about (a protocol, a query field,
 * a capability) so that the CLI can print it as is and map it to an exit code in one place.
 */
import type { Protocol, Socket } from "../diag/socket.js";
import type { NamespaceFailure } from "../netns/index.js";
import type { NamespacedDestroyReport } from "../report.js";
import { type AbortSignalLike, sockdiagError } from "../sys/errors.js";

/** QueryError: the query itself is wrong (unknown protocol, state or extension name). Nothing was sent. */
export class QueryError extends sockdiagError("QueryError", "ERR_SOCKDIAG_QUERY") {
  /** The query field at fault, e.g. "states". */
  declare readonly field: string;
  /** The offending value as given. */
  declare readonly value: string;
  constructor(field: string, value: string, detail: string) {
    super(`invalid ${field} "${value}": ${detail}`, { field, value });
  }
}

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
    const real = failures.filter((f) => !f.note);
    const named = real.slice(0, 3).map((f) => `${f.netns}: ${f.error.message}`);
    const s = real.length === 1 ? "" : "s";
    const more = real.length > 3 ? "; ..." : "";
    super(`${real.length} namespace${s} could not be listed: ${named.join("; ")}${more}`, {
      sockets,
      failures,
    });
  }
}

export type { AbortSignalLike };

/**
 * AbortError: the caller's signal aborted a call. Requests already sent were finished first; `report`
 * says what was done before the stop (for a destroy, every socket destroyed so far; sockets found
 * but not attempted are counted as skipped), and `cause` is the signal's reason.
 */
export class AbortError<Report = unknown> extends sockdiagError("AbortError", "ABORT_ERR") {
  declare report: Report | undefined;

  constructor(signal?: AbortSignalLike, report?: Report) {
    super("the operation was aborted", { report }, signal?.reason);
  }
}

/** Throw AbortError when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignalLike | undefined): void {
  if (signal?.aborted) throw new AbortError(signal);
}

/**
 * PredicateError: the caller's predicate threw (`cause`), which ends a destroy (or conntrack
 * delete) run. `report` holds what was done before, balanced: what was queued but not sent is
 * `skipped` (a socket destroy's stops say ECANCELED).
 */
export class PredicateError<Report = NamespacedDestroyReport> extends sockdiagError(
  "PredicateError",
  "ERR_SOCKDIAG_PREDICATE",
) {
  declare readonly report: Report;
  /** `run`: what the predicate was asked about, "destroy" or "delete". */
  constructor(report: Report, cause: unknown, run = "destroy") {
    super(`the ${run} predicate threw: ${messageOf(cause)}`, { report }, cause);
  }
}

/**
 * The predicate's exception on its way out of one namespace's run, marked so that it is never
 * taken for the namespace's own failure.
 */
export class PredicateThrew {
  /** The exception's message, for reports. */
  readonly message: string;
  constructor(readonly cause: unknown) {
    this.message = messageOf(cause);
  }
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** Ask `predicate` about `item`; what it throws comes out as PredicateThrew. */
export function approves<T>(predicate: (item: T) => boolean, item: T): boolean {
  try {
    return predicate(item);
  } catch (err) {
    throw new PredicateThrew(err);
  }
}
