/**
 * iterateSockets / listSockets: the read half of the sockets library.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import { type NetNS, openNetlinkIn } from "../netns/index.js";
import { Dumper } from "./dump.js";
import { compileIn } from "./filtering.js";
import { planQuery, type QueryPlan, type SocketQuery } from "./query.js";
import {
  allTargets,
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
  constructor(private readonly query: NamespacedQuery) {}

  *[Symbol.iterator](): Generator<Socket> {
    const plan = planQuery(this.query);
    this.failures.length = 0;
    const selector = this.query.netns;
    if (selector !== "all") {
      const target: Target =
        selector === undefined ? { netns: undefined, label: undefined } : openSelected(selector);
      try {
        yield* scan(target.netns, target.label, plan);
      } finally {
        target.netns?.close();
      }
      return;
    }
    for (const target of allTargets(this.query, this.failures)) {
      try {
        yield* scan(target.netns, target.label, plan);
      } catch (err) {
        // The caller's own namespace failing means the query itself cannot work: no point going on.
        if (target.netns === undefined || !(err instanceof Error)) throw err;
        this.failures.push({ netns: target.label ?? "(host)", error: err });
      }
    }
  }
}

/** Every socket of `plan` in one namespace, streamed over one netlink socket opened there. */
function* scan(netns: NetNS | undefined, label: string | undefined, plan: QueryPlan): Generator<Socket> {
  using conn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const dumper = new Dumper(conn);
  const options = {
    attributes: plan.attributes,
    netns: label,
    ...compileIn(plan.filter, netns),
  };
  for (const dump of plan.inet) yield* dumper.inet(dump, options);
  if (plan.unix) yield* dumper.unix(plan.unix.states, plan.unix.show, label);
}

/**
 * Stream the sockets that match `query`: memory stays flat whatever the number of sockets. The
 * query is checked before anything is sent (QueryError). Iterating throws UnsupportedProtocolError
 * for a protocol this kernel cannot list, NetnsError for a namespace that cannot be opened,
 * NetlinkError / SysError for other kernel failures. Breaking out of the loop releases everything.
 */
export function iterateSockets(query: NamespacedQuery = {}): SocketIteration {
  planQuery(query);
  return new SocketIteration(query);
}

/**
 * Collect the sockets of `query` into an array. Same errors as iterateSockets; with `netns: "all"`
 * a namespace that failed is skipped — use iterateSockets to read which.
 */
export function listSockets(query: NamespacedQuery = {}): Socket[] {
  return [...iterateSockets(query)];
}
