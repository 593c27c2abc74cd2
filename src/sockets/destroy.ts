/**
 * destroySockets / destroySocket: the write half of the sockets library. Sockets are found with a
 * dump and destroyed in batches while the dump streams — on a second netlink socket in the same
 * namespace when a batch fills mid-dump, on the dump's own once it is over: memory does not grow
 * with the number of sockets.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import { type InetSocket, isInetSocket, type Socket } from "../diag/socket.js";
import { selectsEverything } from "../filter/index.js";
import type { BatchOptions, NetlinkConnection } from "../netlink/index.js";
import {
  current,
  type NetlinkOpener,
  NetNS,
  openNetlinkIn,
  reopenNetns,
  type Target,
} from "../netns/index.js";
import { checkOptions, describe, type KnownKeys, QueryError } from "../options/index.js";
import {
  type Batcher,
  checkRunOptions,
  EmptySelectionError,
  guardListener,
  RUN_OPTION_KEYS,
  type RunKind,
  type RunOptions,
  runInSteps,
  runInTarget,
  runToEnd,
  throwIfAborted,
} from "../run/index.js";
import type { AbortSignalLike, SockdiagError } from "../sys/errors.js";
import { DEFAULT_BATCH_SIZE, Destroyer, type OutcomeListener } from "./destroyer.js";
import { Dumper } from "./dump.js";
import { DestroyError } from "./errors.js";
import { NAMESPACED_QUERY_KEYS, type NamespacedQuery } from "./iterate.js";
import { planQuery, type QueryPlan } from "./query.js";
import { addReport, type DestroyReport, emptyReport, type NamespacedDestroyReport } from "./report.js";
import { type InetSocketFields, revive } from "./revive.js";
import { Scan } from "./scan.js";

/**
 * What destroySockets destroys: a query (as listSockets takes it) and how to go about it (see
 * RunOptions: predicate, all, dryRun, batchSize — 512 SOCK_DESTROY requests per write by default
 * — and signal; a synchronous caller's own thread cannot abort it, destroyInSteps lets an event
 * loop turn).
 */
export interface DestroyQuery extends NamespacedQuery, RunOptions<Socket> {
  /** Told the outcome of every matched socket, as it happens (for printing what was destroyed). */
  onOutcome?: OutcomeListener;
}

const DESTROY_QUERY_KEYS: KnownKeys<DestroyQuery> = {
  ...NAMESPACED_QUERY_KEYS,
  ...RUN_OPTION_KEYS,
  onOutcome: true,
};

/**
 * Destroy every socket matching `query` (and its predicate). Returns what happened to each socket:
 * destroyed, gone (ENOENT, verified by listing again: closed or replaced since the dump, not a
 * failure), failed (with errno), or skipped after the kernel made further attempts pointless
 * (EPERM, EOPNOTSUPP — reported once in `stops`). Sockets that share a 4-tuple (SO_REUSEPORT
 * groups) are destroyed one round at a time until none is left. Never throws for a socket's
 * failure, nor for a namespace that fails after destroying began: that goes to
 * `failures`, with the counts of what was done before it. Throws QueryError /
 * FilterSyntaxError before sending anything when the query is wrong, EmptySelectionError for a
 * query that would destroy everything without `all: true`; for a single namespace, the errors of
 * opening it (NetnsError) and of compiling the filter there; PredicateError when the predicate
 * throws; AbortError when the signal aborts.
 */
export function destroySockets(query: DestroyQuery): NamespacedDestroyReport {
  return runToEnd(socketDestroy(query).of(query.onOutcome), query);
}

/**
 * destroySockets one step at a time: the generator pauses after each receive batch of the dump
 * (and the batches of destroys it filled), and returns the report. A caller that awaits between
 * steps keeps its event loop (signal handlers, timers) running, and may abort `query.signal` there.
 * The query is checked when the first step runs.
 */
export function* destroyInSteps(query: DestroyQuery): Generator<void, NamespacedDestroyReport, void> {
  return yield* runInSteps(socketDestroy(query).of(query.onOutcome), query);
}

/**
 * A destroy query checked and planned once, for a caller that walks the namespaces itself and
 * destroys in each as it goes (a backend terminator's step): what prepareDestroy returns.
 */
export interface PreparedDestroy {
  /**
   * Open `target`'s scan before its turn, for runIn(target) (the caller closes it if runIn never
   * takes it). Throws as destroySockets does when it cannot open a single namespace.
   */
  open(target: Target): Scan;
  /**
   * Start the scan's first dump on another thread, for the runIn that follows: the kernel walks
   * that namespace's table while this thread finishes the one before (a table the namespaces
   * share is walked whole for each). True when the namespace has nothing to walk (its counters
   * show no socket the query asks for).
   */
  sendAhead(scan: Scan): boolean;
  /**
   * destroySockets in `target`, with the outcomes told to `onOutcome` instead of the query's, on
   * `opened` (then runIn closes it) or a scan of its own. Throws as destroySockets does for a
   * single namespace.
   */
  runIn(target: Target, onOutcome?: OutcomeListener, opened?: Scan): NamespacedDestroyReport;
  /**
   * Destroy exactly `sockets` in `target`, found there without a dump (the one pass, bpf/): each by
   * its family, protocol and full id — tuple, bound interface (udp_diag's lookup matches a socket
   * bound to a device only with it) and cookie — the query's predicate and dry run applied as to a
   * dumped socket. One answered ENOENT is gone when a listing of the query there no longer has it
   * (closed meanwhile); a twin in its way is destroyed first, as for a dumped one. Throws as runIn.
   */
  runFound(
    target: Target,
    sockets: readonly InetSocket[],
    onOutcome?: OutcomeListener,
  ): NamespacedDestroyReport;
}

/**
 * `query` checked and planned once (its own `netns` is not used); each namespace's connections
 * opened with `open` when given (a test's fake kernel, see Scan). Throws as destroySockets does
 * before sending anything.
 */
export function prepareDestroy(query: DestroyQuery, open?: NetlinkOpener): PreparedDestroy {
  const kind = socketDestroy(query, open);
  return {
    open: kind.open,
    sendAhead,
    runIn: (target, onOutcome, opened) => runInTarget(kind.of(onOutcome), query, target, opened),
    runFound: (target, sockets, onOutcome) =>
      runInTarget(foundDestroy(kind, sockets, onOutcome), query, target),
  };
}

/**
 * The destroy of `kind` for exactly `sockets`: they are its candidates, no dump finds them. Its
 * batches hold no more than them, and go out on the scan's own connection, which no dump keeps busy.
 */
function foundDestroy(
  kind: DestroyKind,
  sockets: readonly InetSocket[],
  onOutcome: OutcomeListener | undefined,
): RunKind<Socket, [Socket], Scan, DestroyReport> {
  const { sendAhead: _, batcher, ...of } = kind.of(onOutcome, sockets.length);
  const found: Pick<RunKind<Socket, [Socket], Scan, DestroyReport>, "batcher" | "open" | "scan"> = {
    batcher: (scan) => batcher(scan, () => scan.conn),
    // No counters: a socket they no longer count is gone, which only its destroy's answer and the
    // listing after it tell (a scan the counters emptied would skip it as a dry run does).
    open: (target) => new Scan(target, kind.plan, { open: kind.opener, counters: false }),
    scan: (_scan, visit) => {
      for (const s of sockets) visit(s);
      return [];
    },
  };
  // Added to the copy, not spread with it into another object: see emptyRunReport (run/).
  return Object.assign(of, found);
}

/** Scan.sendAhead as a step's hook: whether the namespace has nothing to walk. */
function sendAhead(scan: Scan): boolean {
  scan.sendAhead();
  return scan.empty;
}

/** A destroy query checked and planned: how to open a namespace's scan, and the runner's kind. */
interface DestroyKind {
  readonly plan: QueryPlan;
  /** The test's fake kernel the scans open their connections from, if any. */
  readonly opener: NetlinkOpener | undefined;
  open(target: Target): Scan;
  /** The kind for a listener of outcomes; its batches of at most `most` requests, when given. */
  of(onOutcome: OutcomeListener | undefined, most?: number): RunKind<Socket, [Socket], Scan, DestroyReport>;
}

/** Destroying the sockets of `query`, as the runner drives it: the query is checked whole and planned once, here. */
function socketDestroy(query: DestroyQuery, opener?: NetlinkOpener): DestroyKind {
  checkRunOptions(query, DESTROY_QUERY_KEYS);
  const plan = planQuery(query);
  if (selectsEverything(plan.filter.tree) && !query.predicate && query.all !== true)
    throw new EmptySelectionError(
      "filter",
      typeof query.filter === "object" ? JSON.stringify(query.filter) : String(query.filter ?? ""),
      "destroy every socket",
    );
  const { batchSize, signal } = query;
  const open = (target: Target) => new Scan(target, plan, { open: opener });
  return {
    plan,
    opener,
    open,
    of: (listener, most) => {
      const size = most === undefined ? batchSize : Math.min(batchSize ?? DEFAULT_BATCH_SIZE, most);
      const callbackErrors: SockdiagError[] = [];
      const onOutcome = guardListener(listener, callbackErrors);
      return {
        verb: "destroy",
        open,
        sendAhead,
        scan: (scan, visit) => scan.dumper.steps(scan.plan, scan.options, visit),
        batcher: (scan, connect) => destroyBatcher(scan, connect, { batchSize: size, onOutcome, signal }),
        emptyReport,
        add: addReport,
        callbackErrors,
        would: "wouldDestroy",
        onWould: onOutcome && ((s) => onOutcome(s, "wouldDestroy")),
      };
    },
  };
}

/** A Destroyer as the runner's batcher: the dump's end settles ENOENT answers by listing again. */
function destroyBatcher(
  scan: Scan,
  connect: () => NetlinkConnection,
  options: BatchOptions<OutcomeListener>,
): Batcher<[Socket], DestroyReport> {
  const destroyer = new Destroyer(connect, scan.conn.receiveQueueBytes, options);
  return {
    report: destroyer.report,
    add: (s) => destroyer.add(s),
    finish: (conn) => {
      destroyer.flush(conn);
      destroyer.settle(conn, (sink) => scan.dumper.each(scan.plan, scan.options, sink));
    },
    abort: () => destroyer.abort(),
    stop: (reason) => destroyer.stop("ECANCELED", reason),
    abandon: (err) => destroyer.abandon(err),
  };
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
 * more), or the caller's own when it has none. A plain copy of a listed socket works as well.
 * Returns "destroyed", or "gone" when it no longer exists (ENOENT, and a listing no longer has it).
 * Throws DestroyError when the kernel refuses — also when another socket with the same 4-tuple
 * (SO_REUSEPORT) stands in its way, which only destroying that one first resolves — NetnsError when
 * the namespace cannot be opened.
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
  if (netns) NetNS.checkHandle(netns, "options.netns");
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
  if (isInetSocket(socket)) {
    // An ENOENT answer is checked against a listing of the socket's table (see Destroyer.settle).
    const plan = planQuery({ protocols: [socket.protocol], families: [socket.family] });
    const dumper = new Dumper(conn);
    destroyer.settle(conn, (sink) => dumper.each(plan, { attributes: false }, sink));
  }
  const failure = destroyer.report.failed[0];
  if (failure) throw new DestroyError(failure.errno, failure.code, failure.message);
  return destroyer.report.destroyed === 1 ? "destroyed" : "gone";
}
