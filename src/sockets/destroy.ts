/**
 * destroySockets / destroySocket: the write half of the sockets library. Sockets are found with a
 * dump on one netlink socket and destroyed in batches on a second one opened in the same namespace,
 * while the dump streams: memory does not grow with the number of sockets.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import { type NetNS, openNetlinkIn } from "../netns/index.js";
import { addReport, type DestroyReport, emptyReport } from "./destroy-report.js";
import { DEFAULT_BATCH_SIZE, Destroyer, type OutcomeListener } from "./destroyer.js";
import { Dumper } from "./dump.js";
import { compileIn } from "./filtering.js";
import type { NamespacedQuery } from "./iterate.js";
import { planQuery, type QueryPlan } from "./query.js";
import { allTargets, type NamespaceFailure, openSelected, type Target } from "./targets.js";

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
 * `stops`). Never throws for a socket's failure; throws QueryError before sending anything when the
 * query is wrong, and for a single namespace the errors iterateSockets would throw.
 */
export function destroySockets(query: DestroyQuery): NamespacedDestroyReport {
  const plan = planQuery(query);
  const total: NamespacedDestroyReport = { ...emptyReport(Boolean(query.dryRun)), namespaceFailures: [] };
  const selector = query.netns;
  if (selector !== "all") {
    const target: Target =
      selector === undefined ? { netns: undefined, label: undefined } : openSelected(selector);
    try {
      addReport(total, destroyIn(target.netns, target.label, plan, query));
    } finally {
      target.netns?.close();
    }
    return total;
  }
  for (const target of allTargets(query, total.namespaceFailures)) {
    try {
      addReport(total, destroyIn(target.netns, target.label, plan, query));
    } catch (err) {
      if (target.netns === undefined || !(err instanceof Error)) throw err;
      total.namespaceFailures.push({ netns: target.label ?? "(host)", error: err });
    }
  }
  return total;
}

/** destroySockets in one namespace (undefined: the calling thread's own). */
function destroyIn(
  netns: NetNS | undefined,
  label: string | undefined,
  plan: QueryPlan,
  query: DestroyQuery,
): DestroyReport {
  using dumpConn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const dumper = new Dumper(dumpConn);
  const options = {
    attributes: plan.attributes,
    netns: label,
    ...compileIn(plan.filter, netns),
  };
  const { predicate, onOutcome, dryRun } = query;
  using destroyConn = dryRun ? undefined : openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const destroyer =
    destroyConn && new Destroyer(destroyConn, query.batchSize ?? DEFAULT_BATCH_SIZE, onOutcome);
  const report = destroyer?.report ?? emptyReport(true);
  const visit = (s: Socket) => {
    if (predicate && !predicate(s)) return;
    if (destroyer) return destroyer.add(s);
    report.matched++;
    onOutcome?.(s, "matched");
  };
  dumper.each(plan, options, visit);
  destroyer?.flush();
  return report;
}

/**
 * Destroy exactly `socket` (as listed: its family, protocol and full id including the cookie, in the
 * namespace it was listed in — pass that namespace as `netns` when it is not the caller's own).
 * Returns "destroyed", or "gone" when it no longer exists (ENOENT). Throws DestroyError otherwise.
 */
export function destroySocket(socket: Socket, netns?: NetNS): "destroyed" | "gone" {
  using conn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const destroyer = new Destroyer(conn, 1);
  destroyer.add(socket);
  destroyer.flush();
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
