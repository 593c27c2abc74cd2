/// <reference types="node" preserve="true" />
/**
 * sockdiag/promises: the calls of `sockdiag` with the same names and options, returning Promises.
 * The work runs on one worker thread per process (started by the first call, never keeping an idle
 * process alive), so the caller's event loop never waits on the kernel and namespace moves happen
 * only on that thread. Every call takes `signal`: once it aborts, no further request is sent, the
 * batch in flight is finished, and the call rejects with AbortError whose `report` says what was
 * done. Callbacks (predicate, onOutcome, logger, onNamespace) run on the caller's thread and may
 * return Promises; each costs one round trip between the threads. One still pending when the
 * signal aborts, or past the call's `callbackTimeout` (ms, default 30,000), is taken to have thrown
 * AbortError or CallbackTimeoutError: the call settles with its report whatever a callback never does.
 *
 * @example
 * import { listSockets, BackendTerminator } from "sockdiag/promises";
 * const udp = await listSockets({ protocols: ["udp"], signal: AbortSignal.timeout(5000) });
 * const report = await new BackendTerminator().terminate({ address: "10.0.0.5", port: 53 });
 */
import type {
  ConntrackDeleteReport,
  ConntrackEntry,
  ConntrackNote,
  ConntrackQuery,
  DeleteConntrackQuery,
} from "../conntrack/index.js";
import type { InetSocket, Socket } from "../diag/socket.js";
import { checkNamespaceSelection, type NamespaceFailure } from "../netns/index.js";
import { AbortError } from "../run/index.js";
import { isShared } from "../schedule/index.js";
import type {
  DestroyQuery,
  DestroySocketOptions,
  InetSocketFields,
  NamespacedDestroyReport,
  ProbeResult,
  QuerySocket,
  WatchQuery,
} from "../sockets/index.js";
import { throwIfNamespacesFailed } from "../sockets/index.js";
import {
  type Backend,
  BackendSet,
  type BatchTerminationReport,
  checkTerminatorConfig,
  singleReport,
  type TerminationReport,
  type TerminatorConfig,
} from "../terminator/index.js";
import { client } from "./client.js";
import { terminateShared } from "./pool.js";
import { withLoggerStandIns } from "./sendable.js";
import {
  type Abortable,
  type AsyncQuery,
  AsyncSocketIteration,
  drain,
  SocketWatchStream,
  splitControl,
} from "./streams.js";
import { PacedDecoder } from "./wire.js";

export type { Abortable, AsyncQuery, AsyncSocketIteration, SocketWatchStream };

/** destroySockets' query: as in sockdiag, with a predicate that may return a Promise. */
export type AsyncDestroyQuery = Omit<DestroyQuery, "predicate" | "signal"> &
  Abortable & {
    predicate?: (socket: Socket) => boolean | Promise<boolean>;
  };

/** BackendTerminator's configuration: as in sockdiag, with predicates that may return a Promise. */
export type AsyncTerminatorConfig = Omit<TerminatorConfig, "predicate" | "conntrackPredicate"> & {
  predicate?: (socket: InetSocket) => boolean | Promise<boolean>;
  conntrackPredicate?: (entry: ConntrackEntry) => boolean | Promise<boolean>;
};

/**
 * List the sockets of `query`, as sockdiag's listSockets does (same query, same sockets), without
 * blocking the caller's thread. With `netns: "all"`, namespaces that failed make it reject with
 * NamespacesFailedError, which carries the sockets listed and the failures (as sockdiag's).
 */
export async function listSockets<const Q extends AsyncQuery>(query?: Q): Promise<QuerySocket<Q>[]> {
  const [rest, control] = splitControl<AsyncQuery>(query === undefined ? {} : query);
  const out: QuerySocket<Q>[] = [];
  const decoder = new PacedDecoder((s) => {
    // The query's protocols decide which sockets come, as in sockdiag's SocketIteration.
    out.push(s as QuerySocket<Q>);
  });
  const { failures } = await client.call("listSockets", [rest], control, (chunk) => decoder.push(chunk));
  await decoder.drained();
  throwIfNamespacesFailed(out, failures);
  return out;
}

/** Stream the sockets of `query` (see AsyncSocketIteration). Errors come from the loop. */
export function iterateSockets<const Q extends AsyncQuery>(query?: Q): AsyncSocketIteration<QuerySocket<Q>> {
  return new AsyncSocketIteration(query === undefined ? {} : query);
}

/**
 * Destroy the sockets of `query`, as sockdiag's destroySockets does; the predicate and onOutcome
 * run on the caller's thread. Aborting rejects with AbortError whose `report` balances: what was
 * destroyed, gone or failed before the stop, the rest of what was found counted as skipped.
 */
export async function destroySockets(query: AsyncDestroyQuery): Promise<NamespacedDestroyReport> {
  const [rest, control] = splitControl(query);
  return client.call("destroySockets", [rest], control);
}

/** Destroy exactly `socket` in the namespace it was listed in (see sockdiag's destroySocket). */
export async function destroySocket(
  socket: Socket | InetSocketFields,
  options: Omit<DestroySocketOptions, "signal"> & Abortable = {},
): Promise<"destroyed" | "gone"> {
  const [rest, control] = splitControl(options);
  return client.call("destroySocket", [socket, rest], control);
}

/**
 * BackendTerminator as in sockdiag, with terminate() returning a Promise. The configuration is
 * sent to the worker with each call: its callbacks (predicate, onNamespace) run on the caller's
 * thread, and so do its logger's methods (trace, debug, info, warn, error), called on the logger
 * as the sync terminator calls them. Any other function the configuration holds where the worker
 * cannot receive it (inside a class instance, a Map) is refused with QueryError naming the field.
 */
export class BackendTerminator {
  private readonly config: AsyncTerminatorConfig;

  constructor(config: AsyncTerminatorConfig = {}) {
    checkTerminatorConfig(config);
    this.config = withLoggerStandIns(config);
  }

  /** Terminate `backend` everywhere (see sockdiag's BackendTerminator#terminate). */
  async terminate(backend: Backend, options: Abortable = {}): Promise<TerminationReport> {
    checkNamespaceSelection(this.config);
    if (!isShared(this.config)) {
      const [rest, control] = splitControl(options);
      return client.call("terminate", [this.config, backend, rest], control);
    }
    try {
      return singleReport(await this.terminateMany([backend], options));
    } catch (err) {
      if (err instanceof AbortError && err.report)
        err.report = singleReport(err.report as BatchTerminationReport);
      throw err;
    }
  }

  /**
   * Terminate many backends in one pass (see sockdiag's BackendTerminator#terminateMany). With
   * `netns: "all"` (the default) the namespaces are shared out over a worker per core; with the
   * one pass, the first worker runs it once and the namespaces it keeps are shared out (those it
   * rules out are not entered). The report is the one a single worker would give.
   */
  async terminateMany(
    backends: readonly Backend[],
    options: Abortable = {},
  ): Promise<BatchTerminationReport> {
    checkNamespaceSelection(this.config);
    const [rest, control] = splitControl(options);
    // Bad backends are refused here, before any namespace is listed.
    const set = new BackendSet(backends, this.config.protocol ?? "udp");
    if (!isShared(this.config) || set.size === 0)
      return client.call("terminateMany", [this.config, backends, rest], control);
    return terminateShared(this.config, backends, rest, control);
  }
}

/** terminateUDPConnectionsToBackend, as in sockdiag, returning a Promise. */
export async function terminateUDPConnectionsToBackend(
  backend: string,
  options: AsyncTerminatorConfig & Abortable = {},
): Promise<TerminationReport> {
  const [rest, control] = splitControl(options);
  return client.call("terminateUDPConnectionsToBackend", [backend, withLoggerStandIns(rest)], control);
}

/**
 * Watch sockets as the kernel frees them (ss -E): TCP and UDP, IPv4 and IPv6 (the sock_diag destroy
 * multicast groups), in one namespace or with `netns: "all"` in every one (namespaces that appear
 * later join within seconds). `filter` keeps the others out. Needs CAP_NET_ADMIN.
 *
 * @example
 * const watch = watchSockets({ protocols: ["udp"], filter: "dport = :53", signal });
 * for await (const s of watch) console.log(s.netns, s.src, s.sport, s.dst, s.dport, s.cookie);
 */
export function watchSockets(query: WatchQuery & Abortable = {}): SocketWatchStream {
  return new SocketWatchStream(query);
}

/** What this kernel and these privileges support, checked on the worker's thread. */
export async function probe(options: Abortable = {}): Promise<ProbeResult> {
  const [, control] = splitControl(options);
  return client.call("probe", [], control);
}

/** A conntrack query with its signal. */
export type AsyncConntrackQuery = ConntrackQuery & Abortable;

/** deleteConntrack's query: as in sockdiag, with a predicate that may return a Promise. */
export type AsyncDeleteConntrackQuery = Omit<DeleteConntrackQuery, "predicate" | "signal"> &
  Abortable & {
    predicate?: (entry: ConntrackEntry) => boolean | Promise<boolean>;
  };

/** The conntrack entries of `query`, as sockdiag's listConntrack lists them, off the caller's thread. */
export async function listConntrack(query: AsyncConntrackQuery = {}): Promise<ConntrackEntry[]> {
  const out: ConntrackEntry[] = [];
  for await (const e of iterateConntrack(query)) out.push(e);
  return out;
}

/**
 * AsyncConntrackIteration streams the entries of a query as AsyncSocketIteration streams sockets:
 * `for await` pulls them by chunks from the worker, a couple of chunks ahead at most (memory stays
 * flat however large the table), and breaking out of the loop ends the worker's dump and closes
 * its netlink socket at once. `failures` (namespaces that failed) and `notes` (namespaces without
 * conntrack) grow as they are met. Each `for await` is a fresh pass.
 */
class AsyncConntrackIteration implements AsyncIterable<ConntrackEntry> {
  readonly failures: NamespaceFailure[] = [];
  readonly notes: ConntrackNote[] = [];

  constructor(private readonly query: AsyncConntrackQuery) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<ConntrackEntry> {
    const [rest, control] = splitControl(this.query);
    this.failures.length = 0;
    this.notes.length = 0;
    yield* drain(client.open("iterateConntrack", [rest], control.signal), this);
  }
}

/** Iterate the conntrack entries of `query` (see AsyncConntrackIteration). */
export function iterateConntrack(query: AsyncConntrackQuery = {}): AsyncConntrackIteration {
  return new AsyncConntrackIteration(query);
}

/**
 * Delete the conntrack entries of `query`, as sockdiag's deleteConntrack does; the predicate and
 * onOutcome run on the caller's thread. Aborting rejects with AbortError whose `report` balances.
 */
export async function deleteConntrack(query: AsyncDeleteConntrackQuery): Promise<ConntrackDeleteReport> {
  const [rest, control] = splitControl(query);
  return client.call("deleteConntrack", [rest], control);
}

export type { WatchQuery } from "../sockets/index.js";
export type { AsyncConntrackIteration };
export { AbortError };
