/**
 * iterateSockets / listSockets: the read half of the sockets library.
 */
import type { InetSocket, Protocol, Socket, UnixSocket } from "../diag/socket.js";
import {
  checkNamespaceSelection,
  type NamespaceFailure,
  type NamespaceNote,
  type NamespaceSelection,
  SELECTION_KEYS,
  type Target,
  targetsOf,
} from "../netns/index.js";
import { checkOptions, type KnownKeys } from "../options/index.js";
import { recordOrThrow } from "../run/index.js";
import type { DumpOptions, InetMessageSink } from "./dump.js";
import { NamespacesFailedError } from "./errors.js";
import { planQuery, type QueryPlan, SOCKET_QUERY_KEYS, type SocketQuery } from "./query.js";
import { Scan } from "./scan.js";

/** A query plus where to run it (see NamespaceSelection; default: the caller's own namespace). */
export interface NamespacedQuery extends SocketQuery, NamespaceSelection {}

/** The keys of NamespacedQuery, for checkOptions. */
export const NAMESPACED_QUERY_KEYS: KnownKeys<NamespacedQuery> = { ...SOCKET_QUERY_KEYS, ...SELECTION_KEYS };

/** The socket type of a protocol: unix sockets for "unix", inet sockets for the others. */
export type SocketOf<P> = P extends "unix" ? UnixSocket : InetSocket;

/**
 * The sockets a query lists, by its protocols: `{ protocols: ["udp"] }` lists InetSocket (so `s.src`
 * needs no guard), the default (tcp and udp) too; a list that may hold "unix" lists Socket.
 */
export type QuerySocket<Q> = SocketsOfProtocols<Q extends { protocols?: infer A } ? A : undefined>;
type SocketsOfProtocols<A> = [A] extends [undefined]
  ? InetSocket
  : A extends readonly (infer P)[]
    ? SocketOf<P>
    : InetSocket;

/**
 * SocketIteration is the stream of sockets of a query, with the namespaces that failed. With
 * `netns: "all"`, a namespace that cannot be entered or listed is recorded in `failures` and the
 * others go on; with a single namespace the error is thrown instead.
 */
export class SocketIteration<S extends Socket = Socket> implements Iterable<S> {
  readonly failures: NamespaceFailure[] = [];
  /** Namespaces passed over without that being a failure (vanished, unreadable). */
  readonly notes: NamespaceNote[] = [];
  private readonly plan: QueryPlan;

  /**
   * With `ignoreUnsupported`, the protocols left out so far because this kernel cannot list them
   * (no sock_diag handler), in the order met.
   */
  get unsupported(): readonly Protocol[] {
    return [...this.plan.unsupported];
  }

  /** Checks the query at once (QueryError, FilterSyntaxError): nothing is sent before that. */
  constructor(private readonly query: NamespacedQuery) {
    checkOptions(query, NAMESPACED_QUERY_KEYS, "query");
    checkNamespaceSelection(query);
    this.plan = planQuery(query);
  }

  *[Symbol.iterator](): Generator<S> {
    for (const target of this.#targets()) {
      try {
        using scan = new Scan(target, this.plan);
        yield* scan.dumper.sockets(scan.plan, scan.listingOptions()) as Generator<S>;
      } catch (err) {
        recordOrThrow(this.query.netns, target, err, this.failures);
      }
    }
  }

  /** The namespaces of the query, the failures and notes of the walk starting afresh. */
  #targets(): Generator<Target> {
    this.failures.length = 0;
    this.notes.length = 0;
    return targetsOf(this.query, { failures: this.failures, notes: this.notes });
  }

  /**
   * Hand every socket to `sink`, in order: the same as iterating, without a generator step per
   * socket. An exception of `sink` ends the walk and is thrown as it is (never recorded as a
   * namespace failure).
   */
  forEach(sink: (s: S) => void): void {
    this.#walk(sink as (s: Socket) => void, undefined);
  }

  /**
   * @internal forEach, except that the inet sockets nothing needs decoded here (no predicate, no
   * attributes) reach `messages` as the kernel's bytes: sockdiag/promises forwards them as they are.
   */
  forEachMessage(messages: InetMessageSink, sink: (s: Socket) => void): void {
    this.#walk(sink, messages);
  }

  #walk(sink: (s: Socket) => void, messages: InetMessageSink | undefined): void {
    // A sink's exception ends the walk as it is: marked here so that it is not taken for the namespace's.
    let sinkError: { error: unknown } | undefined;
    const guarded = (s: Socket) => {
      try {
        sink(s);
      } catch (error) {
        sinkError = { error };
        throw error;
      }
    };
    const guardedMessages: InetMessageSink | undefined =
      messages &&
      ((buf, offset, protocol, netns) => {
        try {
          messages(buf, offset, protocol, netns);
        } catch (error) {
          sinkError = { error };
          throw error;
        }
      });
    for (const target of this.#targets()) {
      try {
        using scan = new Scan(target, this.plan);
        const listing = scan.listingOptions();
        const options: DumpOptions = guardedMessages ? { ...listing, messages: guardedMessages } : listing;
        scan.dumper.each(scan.plan, options, guarded);
      } catch (err) {
        if (sinkError) throw sinkError.error;
        recordOrThrow(this.query.netns, target, err, this.failures);
      }
    }
  }

  /** Every socket in an array: the same as spreading the iteration, without a generator per socket. */
  toArray(): S[] {
    const out: S[] = [];
    this.forEach((s) => {
      out.push(s);
    });
    return out;
  }
}

/**
 * Stream the sockets that match `query`: memory stays flat whatever the number of sockets. The
 * query is checked before anything is sent (QueryError). Iterating throws UnsupportedProtocolError
 * for a protocol this kernel cannot list, NetnsError for a namespace that cannot be opened,
 * NetlinkError / SysError for other kernel failures. Breaking out of the loop releases everything.
 */
export function iterateSockets<const Q extends NamespacedQuery>(query?: Q): SocketIteration<QuerySocket<Q>> {
  return new SocketIteration(query === undefined ? {} : query);
}

/**
 * Collect the sockets of `query` into an array. Same errors as iterateSockets; with `netns: "all"`,
 * a namespace that failed (not one passed over with a note: vanished, unreadable) makes it throw
 * NamespacesFailedError once every namespace was visited — the error carries the sockets listed
 * and the failures, which are never dropped. iterateSockets goes on past them instead, and says
 * which in `failures` (and `notes`).
 */
export function listSockets<const Q extends NamespacedQuery>(query?: Q): QuerySocket<Q>[] {
  const iteration = iterateSockets(query);
  const sockets = iteration.toArray();
  throwIfNamespacesFailed(sockets, iteration.failures);
  return sockets;
}

/** Throw NamespacesFailedError when some namespace failed. */
export function throwIfNamespacesFailed(
  sockets: readonly Socket[],
  failures: readonly NamespaceFailure[],
): void {
  if (failures.length > 0) throw new NamespacesFailedError(sockets, failures);
}
