/**
 * destroySockets / destroySocket: the write half of the sockets library. Sockets are found with a
 * dump and destroyed in batches while the dump streams — on a second netlink socket in the same
 * namespace when a batch fills mid-dump, on the dump's own once it is over: memory does not grow
 * with the number of sockets.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import type { NetlinkConnection } from "../netlink/index.js";
import { fromLabel, NetNS, openNetlinkIn } from "../netns/index.js";
import { SockdiagError } from "../sys/errors.js";
import { addReport, type DestroyReport, emptyReport } from "./destroy-report.js";
import { DEFAULT_BATCH_SIZE, Destroyer, type OutcomeListener } from "./destroyer.js";
import { AbortError, type AbortSignalLike, throwIfAborted } from "./errors.js";
import type { NamespacedQuery } from "./iterate.js";
import { planQuery } from "./query.js";
import { Scan } from "./scan.js";
import { isNamespaceScoped, type NamespaceFailure, recordOrThrow, targetsOf } from "./targets.js";

/** What destroySockets destroys: a query (as listSockets takes it) and how to go about it. */
export interface DestroyQuery extends NamespacedQuery {
  /**
   * Called with each candidate after the kernel and the filter selected it; return false to keep the
   * socket (Cilium's DestroyCB). Must be synchronous. An exception it throws aborts the run.
   */
  predicate?: (socket: Socket) => boolean;
  /** Find and count, destroy nothing. */
  dryRun?: boolean;
  /** SOCK_DESTROY requests per write (default 512). */
  batchSize?: number;
  /** Told the outcome of every matched socket, as it happens (for printing what was destroyed). */
  onOutcome?: OutcomeListener;
  /**
   * Checked before every write: once aborted, no further request is sent (the batch in flight is
   * finished) and AbortError is thrown with the report of what was done.
   */
  signal?: AbortSignalLike;
}

/** A destroy report that also says which namespaces could not be visited (netns "all"). */
export interface NamespacedDestroyReport extends DestroyReport {
  namespaceFailures: NamespaceFailure[];
}

/**
 * Destroy every socket matching `query` (and its predicate). Returns what happened to each socket:
 * destroyed, gone (ENOENT: closed or replaced since the dump, not a failure), failed (with errno),
 * or skipped after the kernel made further attempts pointless (EPERM, EOPNOTSUPP — reported once in
 * `stops`). Never throws for a socket's failure, nor for a namespace that fails after destroying
 * began: that goes to `namespaceFailures`, with the counts of what was done before it. Throws
 * QueryError / FilterSyntaxError before sending anything when the query is wrong; for a single
 * namespace, the errors of opening it (NetnsError) and of compiling the filter there.
 */
export function destroySockets(query: DestroyQuery): NamespacedDestroyReport {
  const plan = planQuery(query);
  const total: NamespacedDestroyReport = { ...emptyReport(Boolean(query.dryRun)), namespaceFailures: [] };
  const { signal } = query;
  try {
    throwIfAborted(signal);
    for (const target of targetsOf(query.netns, query, total.namespaceFailures)) {
      try {
        using scan = new Scan(target, plan);
        destroyIn(scan, query, total);
      } catch (err) {
        recordOrThrow(query.netns, target, err, total.namespaceFailures);
      }
      throwIfAborted(signal);
    }
  } catch (err) {
    if (err instanceof AbortError) err.report = total;
    throw err;
  }
  return total;
}

/**
 * destroySockets in one namespace, adding what it did to `total` — also when it fails half way, so
 * that no destroyed socket goes uncounted.
 */
function destroyIn(scan: Scan, query: DestroyQuery, total: NamespacedDestroyReport): void {
  const { predicate, onOutcome, dryRun } = query;
  // A second socket only if a batch fills while the dump runs; the last batch goes on the dump's own.
  let destroyConn: NetlinkConnection | undefined;
  const connect = (): NetlinkConnection => {
    destroyConn ??= scan.openAnother();
    return destroyConn;
  };
  const destroyer = dryRun
    ? undefined
    : new Destroyer(
        connect,
        scan.conn.receiveQueueBytes,
        query.batchSize ?? DEFAULT_BATCH_SIZE,
        onOutcome,
        query.signal,
      );
  const report = destroyer?.report ?? emptyReport(true);
  const visit = (s: Socket) => {
    if (predicate && !predicate(s)) return;
    if (destroyer) return destroyer.add(s);
    report.matched++;
    onOutcome?.(s, "matched");
  };
  try {
    scan.dumper.each(scan.plan, scan.options, visit);
    destroyer?.flush(scan.conn);
  } catch (err) {
    if (!isNamespaceScoped(err)) throw err;
    total.namespaceFailures.push({ netns: scan.target.label ?? "(host)", error: err });
  } finally {
    destroyConn?.close();
    addReport(total, report);
  }
}

/** Options of destroySocket. */
export interface DestroySocketOptions {
  /** The namespace to destroy it in (default: the one the socket was listed in). */
  netns?: NetNS | undefined;
  /** Already aborted: nothing is sent (AbortError). */
  signal?: AbortSignalLike | undefined;
}

/**
 * Destroy exactly `socket` (as listed: its family, protocol and full id including the cookie), in
 * the namespace it was listed in: `netns` when given, else the one its `netns` label names, else
 * the caller's own. Returns "destroyed", or "gone" when it no longer exists (ENOENT). Throws
 * DestroyError when the kernel refuses, NetnsError when the namespace cannot be opened.
 */
export function destroySocket(socket: Socket, options?: NetNS | DestroySocketOptions): "destroyed" | "gone" {
  const { netns, signal } =
    options instanceof NetNS ? { netns: options, signal: undefined } : (options ?? {});
  throwIfAborted(signal);
  using labelled = netns === undefined && socket.netns !== undefined ? fromLabel(socket.netns) : undefined;
  using conn = openNetlinkIn(netns ?? labelled, NETLINK_SOCK_DIAG);
  const destroyer = new Destroyer(() => conn, conn.receiveQueueBytes, 1);
  destroyer.add(socket);
  destroyer.flush(conn);
  const failure = destroyer.report.failed[0];
  if (failure) throw new DestroyError(failure.errno, failure.code, failure.message);
  return destroyer.report.destroyed === 1 ? "destroyed" : "gone";
}

/** DestroyError: the kernel refused to destroy a socket. */
export class DestroyError extends SockdiagError {
  override readonly name = "DestroyError";
  constructor(
    readonly errno: number,
    /** The errno name the kernel answered, e.g. "EPERM". */
    override readonly code: string,
    message: string,
  ) {
    super(`cannot destroy socket: ${code}: ${message}`);
  }
}
