/**
 * iterateSockets / listSockets: the read half of the sockets library.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import type { NetlinkSocket } from "../netlink/index.js";
import { openNetlinkIn } from "../netns/index.js";
import { Dumper, type DumpOptions } from "./dump.js";
import { compileIn } from "./filtering.js";
import { planQuery, type QueryPlan, type SocketQuery } from "./query.js";
import {
  allTargets,
  isNamespaceScoped,
  type NamespaceFailure,
  type NamespaceSourceOptions,
  type NetnsSelector,
  openSelected,
  type Target,
} from "./targets.js";

/** A query plus where to run it. */
export interface NamespacedQuery extends SocketQuery, NamespaceSourceOptions {
  /**
   * The network namespace to list: a NetNS handle, a pinned name, a path, or "all" (the caller's
   * own, then every pinned and discovered namespace). Default: the caller's own.
   */
  netns?: NetnsSelector | "all";
}

/**
 * SocketIteration is the stream of sockets of a query, with the namespaces that failed. With
 * `netns: "all"`, a namespace that cannot be entered or listed is recorded in `failures` and the
 * others go on; with a single namespace the error is thrown instead.
 */
export class SocketIteration implements Iterable<Socket> {
  readonly failures: NamespaceFailure[] = [];
  private readonly plan: QueryPlan;

  /** Checks the query at once (QueryError, FilterSyntaxError): nothing is sent before that. */
  constructor(private readonly query: NamespacedQuery) {
    this.plan = planQuery(query);
  }

  *[Symbol.iterator](): Generator<Socket> {
    const plan = this.plan;
    for (const target of this.targets()) {
      try {
        using scan = new Scan(target, plan);
        yield* scan.dumper.sockets(plan, scan.options);
      } catch (err) {
        this.fail(target, err);
      }
    }
  }

  /** Every socket in an array: the same as spreading the iteration, without a generator per socket. */
  toArray(): Socket[] {
    const plan = this.plan;
    const out: Socket[] = [];
    const push = (s: Socket) => {
      out.push(s);
    };
    for (const target of this.targets()) {
      try {
        using scan = new Scan(target, plan);
        scan.dumper.each(plan, scan.options, push);
      } catch (err) {
        this.fail(target, err);
      }
    }
    return out;
  }

  // The namespaces to visit; a single one is opened here and closed when the walk ends.
  private *targets(): Generator<Target> {
    this.failures.length = 0;
    const selector = this.query.netns;
    if (selector === "all") {
      yield* allTargets(this.query, this.failures);
      return;
    }
    const target: Target =
      selector === undefined ? { netns: undefined, label: undefined } : openSelected(selector);
    try {
      yield target;
    } finally {
      target.netns?.close();
    }
  }

  // With netns "all", a namespace other than the caller's own that fails is recorded and skipped;
  // otherwise (a single namespace, or the caller's own failing) the query itself cannot work.
  private fail(target: Target, err: unknown): void {
    if (this.query.netns !== "all" || target.netns === undefined || !isNamespaceScoped(err)) throw err;
    this.failures.push({ netns: target.label ?? "(host)", error: err });
  }
}

/** One namespace's listing: a netlink socket opened there and the filter compiled for it. */
class Scan implements Disposable {
  readonly conn: NetlinkSocket;
  readonly dumper: Dumper;
  readonly options: DumpOptions;

  constructor(target: Target, plan: QueryPlan) {
    this.conn = openNetlinkIn(target.netns, NETLINK_SOCK_DIAG);
    this.dumper = new Dumper(this.conn);
    this.options = {
      attributes: plan.attributes,
      netns: target.label,
      ...compileIn(plan.filter, target.netns),
    };
  }

  [Symbol.dispose](): void {
    this.conn.close();
  }
}

/**
 * Stream the sockets that match `query`: memory stays flat whatever the number of sockets. The
 * query is checked before anything is sent (QueryError). Iterating throws UnsupportedProtocolError
 * for a protocol this kernel cannot list, NetnsError for a namespace that cannot be opened,
 * NetlinkError / SysError for other kernel failures. Breaking out of the loop releases everything.
 */
export function iterateSockets(query: NamespacedQuery = {}): SocketIteration {
  return new SocketIteration(query);
}

/**
 * Collect the sockets of `query` into an array. Same errors as iterateSockets; with `netns: "all"`
 * a namespace that failed is skipped — use iterateSockets to read which.
 */
export function listSockets(query: NamespacedQuery = {}): Socket[] {
  return iterateSockets(query).toArray();
}
