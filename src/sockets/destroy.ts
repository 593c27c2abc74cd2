/**
 * destroySockets / destroySocket: the write half of the sockets library. Sockets are found with a
 * dump on one netlink socket and destroyed in batches on a second one opened in the same namespace,
 * while the dump streams: memory does not grow with the number of sockets.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import type { NetlinkSocket } from "../netlink/index.js";
import { type NetNS, openNetlinkIn } from "../netns/index.js";
import { addReport, type DestroyReport, emptyReport } from "./destroy-report.js";
import { DEFAULT_BATCH_SIZE, Destroyer, type OutcomeListener } from "./destroyer.js";
import { Dumper } from "./dump.js";
import { compileIn } from "./filtering.js";
import type { NamespacedQuery } from "./iterate.js";
import { planQuery, type QueryPlan } from "./query.js";
import {
  allTargets,
  isNamespaceScoped,
  type NamespaceFailure,
  openLabel,
  openSelected,
  type Target,
} from "./targets.js";

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
  const selector = query.netns;
  if (selector !== "all") {
    const target: Target =
      selector === undefined ? { netns: undefined, label: undefined } : openSelected(selector);
    try {
      destroyIn(target.netns, target.label, plan, query, total);
    } finally {
      target.netns?.close();
    }
    return total;
  }
  for (const target of allTargets(query, total.namespaceFailures)) {
    try {
      destroyIn(target.netns, target.label, plan, query, total);
    } catch (err) {
      // Setting up failed in a namespace other than the caller's own: record it and go on.
      if (target.netns === undefined || !isNamespaceScoped(err)) throw err;
      total.namespaceFailures.push({ netns: target.label ?? "(host)", error: err });
    }
  }
  return total;
}

/**
 * destroySockets in one namespace (undefined: the calling thread's own), adding what it did to
 * `total` — also when it fails half way, so that no destroyed socket goes uncounted.
 */
function destroyIn(
  netns: NetNS | undefined,
  label: string | undefined,
  plan: QueryPlan,
  query: DestroyQuery,
  total: NamespacedDestroyReport,
): void {
  using dumpConn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const dumper = new Dumper(dumpConn);
  const options = {
    attributes: plan.attributes,
    netns: label,
    ...compileIn(plan.filter, netns),
  };
  const { predicate, onOutcome, dryRun } = query;
  // A second socket only if a batch fills while the dump runs; the last batch goes on the dump's own.
  let destroyConn: NetlinkSocket | undefined;
  const connect = () => {
    destroyConn ??= openNetlinkIn(netns, NETLINK_SOCK_DIAG);
    return destroyConn;
  };
  const destroyer = dryRun
    ? undefined
    : new Destroyer(connect, dumpConn.receiveQueueBytes, query.batchSize ?? DEFAULT_BATCH_SIZE, onOutcome);
  const report = destroyer?.report ?? emptyReport(true);
  const visit = (s: Socket) => {
    if (predicate && !predicate(s)) return;
    if (destroyer) return destroyer.add(s);
    report.matched++;
    onOutcome?.(s, "matched");
  };
  try {
    dumper.each(plan, options, visit);
    destroyer?.flush(dumpConn);
  } catch (err) {
    if (!isNamespaceScoped(err)) throw err;
    total.namespaceFailures.push({ netns: label ?? "(host)", error: err });
  } finally {
    destroyConn?.close();
    addReport(total, report);
  }
}

/**
 * Destroy exactly `socket` (as listed: its family, protocol and full id including the cookie), in
 * the namespace it was listed in: `netns` when given, else the one its `netns` label names, else
 * the caller's own. Returns "destroyed", or "gone" when it no longer exists (ENOENT). Throws
 * DestroyError when the kernel refuses, NetnsError when the namespace cannot be opened.
 */
export function destroySocket(socket: Socket, netns?: NetNS): "destroyed" | "gone" {
  using labelled = netns === undefined && socket.netns !== undefined ? openLabel(socket.netns) : undefined;
  using conn = openNetlinkIn(netns ?? labelled, NETLINK_SOCK_DIAG);
  const destroyer = new Destroyer(() => conn, conn.receiveQueueBytes, 1);
  destroyer.add(socket);
  destroyer.flush(conn);
  const failure = destroyer.report.failed[0];
  if (failure) throw new DestroyError(failure.errno, failure.code, failure.message);
  return destroyer.report.destroyed === 1 ? "destroyed" : "gone";
}

/** DestroyError: the kernel refused to destroy a socket. */
export class DestroyError extends Error {
  override readonly name = "DestroyError";
  constructor(
    readonly errno: number,
    readonly code: string,
    message: string,
  ) {
    super(`cannot destroy socket: ${code}: ${message}`);
  }
}
