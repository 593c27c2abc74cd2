/**
 * destroySockets / destroySocket: the write half of the sockets library. Sockets are found with a
 * dump and destroyed in batches while the dump streams — on a second netlink socket in the same
 * namespace when a batch fills mid-dump, on the dump's own once it is over: memory does not grow
 * with the number of sockets.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import { selectsEverything } from "../filter/index.js";
import type { NetlinkConnection } from "../netlink/index.js";
import { current, NetNS, openNetlinkIn, reopenNetns } from "../netns/index.js";
import { addReport, emptyReport, type NamespacedDestroyReport } from "../report.js";
import { sockdiagError } from "../sys/errors.js";
import { Destroyer, type OutcomeListener } from "./destroyer.js";
import { Dumper, Scan } from "./dump.js";
import {
  AbortError,
  type AbortSignalLike,
  approves,
  PredicateError,
  PredicateThrew,
  QueryError,
  throwIfAborted,
} from "./errors.js";
import { NAMESPACED_QUERY_KEYS, type NamespacedQuery } from "./iterate.js";
import { checkOptions, checkRunOptions, describe, type KnownKeys } from "./options.js";
import { checkNamespacedQuery, isNamespaceScoped, planQuery, recordOrThrow, targetsOf } from "./query.js";
import { type InetSocketFields, revive } from "./revive.js";

/** What destroySockets destroys: a query (as listSockets takes it) and how to go about it. */
export interface DestroyQuery extends NamespacedQuery {
  /**
   * Called with each candidate after the kernel and the filter selected it; return false to keep the
   * socket (Cilium's DestroyCB). Must be synchronous. An exception it throws ends the run: it is
   * rethrown as PredicateError, which carries the report of what was done before.
   */
  predicate?: (socket: Socket) => boolean;
  /**
   * Allow a query without a filter and without a predicate, which destroys every socket of its
   * protocols and states. Without it, such a query throws QueryError before anything is sent: an
   * empty selection never means "everything" by accident.
   */
  all?: boolean;
  /** Find and count, destroy nothing. */
  dryRun?: boolean;
  /** SOCK_DESTROY requests per write (default 512). */
  batchSize?: number;
  /** Told the outcome of every matched socket, as it happens (for printing what was destroyed). */
  onOutcome?: OutcomeListener;
  /**
   * Checked before every write and between receive batches: once aborted, no further request is
   * sent (the batch in flight is finished) and AbortError is thrown with the report of what was
   * done. A synchronous caller's own thread cannot abort it; destroyInSteps lets an event loop turn.
   */
  signal?: AbortSignalLike;
}

const DESTROY_QUERY_KEYS: KnownKeys<DestroyQuery> = {
  ...NAMESPACED_QUERY_KEYS,
  predicate: true,
  all: true,
  dryRun: true,
  batchSize: true,
  onOutcome: true,
  signal: true,
};

/**
 * Destroy every socket matching `query` (and its predicate). Returns what happened to each socket:
 * destroyed, gone (ENOENT, verified by listing again: closed or replaced since the dump, not a
 * failure), failed (with errno), or skipped after the kernel made further attempts pointless
 * (EPERM, EOPNOTSUPP — reported once in `stops`). Sockets that share a 4-tuple (SO_REUSEPORT
 * groups) are destroyed one round at a time until none is left. Never throws for a socket's
 * failure, nor for a namespace that fails after destroying began: that goes to
 * `namespaceFailures`, with the counts of what was done before it. Throws QueryError /
 * FilterSyntaxError before sending anything when the query is wrong — also for a query that would
 * destroy everything without `all: true`; for a single namespace, the errors of opening it
 * (NetnsError) and of compiling the filter there; PredicateError when the predicate throws;
 * AbortError when the signal aborts.
 */
export function destroySockets(query: DestroyQuery): NamespacedDestroyReport {
  const run = destroyInSteps(query);
  for (;;) {
    const step = run.next();
    if (step.done) return step.value;
  }
}

/**
 * destroySockets one step at a time: the generator pauses after each receive batch of the dump
 * (and the batches of destroys it filled), and returns the report. A caller that awaits between
 * steps keeps its event loop (signal handlers, timers) running, and may abort `query.signal` there.
 * The query is checked when the first step runs.
 */
export function* destroyInSteps(query: DestroyQuery): Generator<void, NamespacedDestroyReport, void> {
  checkNamespacedQuery(query, DESTROY_QUERY_KEYS);
  checkRunOptions(query);
  const plan = planQuery(query);
  if (selectsEverything(plan.filter.tree) && !query.predicate && query.all !== true) {
    throw new QueryError(
      "filter",
      typeof query.filter === "object" ? JSON.stringify(query.filter) : String(query.filter ?? ""),
      "an empty filter (or one whose every condition is a wildcard) without a predicate would destroy every socket; give a filter, or all: true to mean it",
    );
  }
  const total: NamespacedDestroyReport = { ...emptyReport(Boolean(query.dryRun)), namespaceFailures: [] };
  const { signal } = query;
  try {
    throwIfAborted(signal);
    for (const target of targetsOf(query.netns, query, total.namespaceFailures)) {
      try {
        using scan = new Scan(target, plan);
        yield* destroyIn(scan, query, total);
      } catch (err) {
        if (err instanceof PredicateThrew) throw new PredicateError(total, err.cause);
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
 * that no matched socket goes uncounted.
 */
function* destroyIn(scan: Scan, query: DestroyQuery, total: NamespacedDestroyReport): Generator<void> {
  const { predicate, onOutcome, dryRun, signal } = query;
  // A second socket only if a batch fills while the dump runs; the last batch goes on the dump's own.
  let destroyConn: NetlinkConnection | undefined;
  const connect = (): NetlinkConnection => {
    destroyConn ??= scan.openAnother();
    return destroyConn;
  };
  const destroyer = dryRun
    ? undefined
    : new Destroyer(connect, scan.conn.receiveQueueBytes, { batchSize: query.batchSize, onOutcome, signal });
  const report = destroyer?.report ?? emptyReport(true);
  const visit = (s: Socket) => {
    if (predicate && !approves(predicate, s)) return;
    if (destroyer) return destroyer.add(s);
    report.matched++;
    onOutcome?.(s, "matched");
  };
  try {
    for (const _ of scan.dumper.steps(scan.plan, scan.options, visit)) {
      if (signal?.aborted) destroyer ? destroyer.abort() : throwIfAborted(signal);
      yield;
    }
    if (destroyer) {
      destroyer.flush(scan.conn);
      destroyer.settle(scan.conn, (sink) => scan.dumper.each(scan.plan, scan.options, sink));
    }
  } catch (err) {
    if (err instanceof PredicateThrew) {
      destroyer?.stop("ECANCELED", `the predicate threw: ${err.message}`);
      throw err;
    }
    destroyer?.abandon(err);
    if (!isNamespaceScoped(err)) throw err;
    total.namespaceFailures.push({ netns: scan.target.label ?? "(host)", error: err });
  } finally {
    destroyConn?.close();
    addReport(total, report);
  }
}

/** Options of destroySocket. */
export interface DestroySocketOptions {
  /**
   * The namespace the caller means: it must be the one the socket was listed in, or nothing is
   * sent (QueryError). Default: the one the socket was listed in.
   */
  netns?: NetNS | undefined;
  /** Already aborted: nothing is sent (AbortError). */
  signal?: AbortSignalLike | undefined;
}

const DESTROY_SOCKET_KEYS: KnownKeys<DestroySocketOptions> = { netns: true, signal: true };

/**
 * Destroy exactly `socket` (as listed: its family, protocol and full id including the cookie), in
 * the namespace it was listed in and nowhere else: the one its `netns` reference names, reopened
 * only while it is still that namespace (NetnsNotFoundError when no pin or process leads there any
 * more), or the caller's own when it has none. A plain copy of a listed socket works as well. Returns "destroyed", or "gone" when it no longer exists (ENOENT, and a listing
 * no longer has it). Throws DestroyError when the kernel refuses — also when another socket with
 * the same 4-tuple (SO_REUSEPORT) stands in its way, which only destroying that one first resolves
 * — NetnsError when the namespace cannot be opened.
 */
export function destroySocket(
  given: Socket | InetSocketFields,
  options?: NetNS | DestroySocketOptions,
): "destroyed" | "gone" {
  if (given === null || typeof given !== "object")
    throw new QueryError(
      "socket",
      String(given),
      "expected a socket as listSockets or iterateSockets returned it",
    );
  const socket = revive(given);
  if (!(options instanceof NetNS) && options !== undefined) {
    checkOptions(options, DESTROY_SOCKET_KEYS, "options");
    if (options.netns !== undefined && !(options.netns instanceof NetNS))
      throw new QueryError("options.netns", describe(options.netns), "expected a NetNS handle");
  }
  const { netns, signal } =
    options instanceof NetNS ? { netns: options, signal: undefined } : (options ?? {});
  throwIfAborted(signal);
  using listed = socket.netns === undefined ? undefined : reopenNetns(socket.netns);
  // Only where it was listed: a handle given must be that namespace (the caller's own if none).
  if (netns !== undefined) {
    using own = listed ? undefined : current();
    if (!netns.equals((listed ?? own)!))
      throw new QueryError(
        "netns",
        netns.label,
        `the socket was listed in ${socket.netns?.label ?? "the caller's own namespace"}, not there`,
      );
  }
  using conn = openNetlinkIn(listed, NETLINK_SOCK_DIAG);
  const destroyer = new Destroyer(() => conn, conn.receiveQueueBytes, { batchSize: 1 });
  destroyer.add(socket);
  destroyer.flush(conn);
  if (socket.family !== "unix") {
    // An ENOENT answer is checked against a listing of the socket's table (see Destroyer.settle).
    const plan = planQuery({ protocols: [socket.protocol], families: [socket.family] });
    const dumper = new Dumper(conn);
    destroyer.settle(conn, (sink) => dumper.each(plan, { attributes: false }, sink));
  }
  const failure = destroyer.report.failed[0];
  if (failure) throw new DestroyError(failure.errno, failure.code, failure.message);
  return destroyer.report.destroyed === 1 ? "destroyed" : "gone";
}

/** DestroyError: the kernel refused to destroy a socket. */
export class DestroyError extends sockdiagError<"DestroyError", string>("DestroyError", "") {
  declare readonly errno: number;
  /** `code` is the errno name the kernel answered, e.g. "EPERM". */
  constructor(errno: number, code: string, message: string) {
    super(`cannot destroy socket: ${code}: ${message}`, { errno, code });
  }
}
