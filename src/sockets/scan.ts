/**
 * Scan: one namespace's visit in a query — its socket counters, a netlink socket opened there and
 * the filter compiled there. The counters leave out the dumps they show empty.
 */
import {
  NETLINK_SOCK_DIAG,
  TCP_CLOSE_WAIT,
  TCP_CLOSING,
  TCP_ESTABLISHED,
  TCP_FIN_WAIT1,
  TCP_FIN_WAIT2,
  TCP_LAST_ACK,
  TCP_LISTEN,
  TCP_SYN_SENT,
  TCP_TIME_WAIT,
} from "../diag/constants.js";
import { decodeProcRaw } from "../diag/proc-raw.js";
import type { InetProtocol } from "../diag/socket.js";
import { compileIn } from "../filter/index.js";
import { type NetlinkConnection, NetlinkSocket } from "../netlink/index.js";
import {
  inNetns,
  type NetlinkOpener,
  openNetlinkIn,
  readProcNet,
  readSockstat,
  type SocketCounts,
  type Target,
  threadNetns,
} from "../netns/index.js";
import { AF_INET } from "../sys/index.js";
import { Dumper, type DumpOptions } from "./dump.js";
import type { InetDump, QueryPlan } from "./query.js";

/**
 * Scan: one namespace's part of a query — a netlink socket opened there, and the filter compiled
 * there (its `dev` names and port range are that namespace's). Listing and destroying both start
 * from one.
 */
/** How a Scan opens its namespace. */
export interface ScanHow {
  /** A test's fake kernel: each connection from it instead of the namespace. */
  open?: NetlinkOpener | undefined;
  /** Whether the namespace's socket counters may leave dumps out (default true). */
  counters?: boolean;
}

export class Scan implements Disposable {
  private readonly open: NetlinkOpener | undefined;
  readonly conn: NetlinkConnection;
  #dumper: Dumper | undefined;
  readonly options: DumpOptions;
  /** The query's plan without the dumps this namespace's counters show empty. */
  readonly plan: QueryPlan;

  /**
   * Open the socket in `target` (reading its socket counters on the way, unless `counters` is
   * false: sockets found without a dump are there whatever the counters say) and compile `plan`'s
   * filter there; with `open` (a test's fake kernel), its connection in place of the namespace's:
   * no counters read, the filter compiled in the caller's namespace. The caller closes the scan.
   */
  constructor(
    readonly target: Target,
    plan: QueryPlan,
    { open, counters = true }: ScanHow = {},
  ) {
    this.open = open;
    // The counters are read only where they can leave a dump out (`ls -t -a` needs none).
    const counted = counters && !open && plan.inet.some(countable);
    // One visit of the namespace for everything that has to be done inside it.
    const { conn, counts, compiled } = inNetns(open ? undefined : target.netns, () => {
      const counts = counted ? readSockstat() : undefined;
      const compiled = compileIn(plan.filter, undefined);
      return {
        counts,
        compiled,
        conn: open ? open(NETLINK_SOCK_DIAG, target) : NetlinkSocket.open(NETLINK_SOCK_DIAG),
      };
    });
    this.conn = conn;
    this.plan = counts ? withoutEmptyDumps(plan, counts) : plan;
    const { bytecode, predicate } = compiled;
    this.options = { attributes: plan.attributes, netns: target.ref, bytecode, predicate };
  }

  /**
   * The dumps' requests and decoding on the scan's connection, made on first use: a destroy of
   * sockets found without a dump sends none unless an answer has to be checked by listing.
   */
  get dumper(): Dumper {
    this.#dumper ??= new Dumper(this.conn);
    return this.#dumper;
  }

  /**
   * The options of a listing: the dumps' own, and the raw sockets of /proc/net/raw (read in the
   * target namespace) for a kernel without raw_diag. A destroy keeps `options`: from /proc a raw
   * socket can be listed, never destroyed.
   */
  listingOptions(): DumpOptions {
    const { target } = this;
    const netns = this.options.netns;
    return {
      ...this.options,
      rawFromProc: (family, states) => {
        const v4 = family === AF_INET;
        const text = inNetns(target.netns, () => readProcNet(v4 ? "raw" : "raw6"));
        return text === undefined ? [] : decodeProcRaw(text, v4 ? "inet" : "inet6", states, netns);
      },
    };
  }

  /** The namespace's counters leave nothing of the plan to dump here. */
  get empty(): boolean {
    const { inet, unix, families } = this.plan;
    return inet.length === 0 && !unix && families.length === 0;
  }

  /**
   * Start the first dump of the plan on another thread (see Dumper.sendAhead); the scan's steps read
   * it. Not from inside a runIn callback: libuv starts its pool's threads on first use, and a
   * thread starts in the namespace of the one that made it.
   */
  sendAhead(): void {
    const first = this.plan.inet[0];
    if (first && !threadNetns.away) this.dumper.sendAhead(first, this.options);
  }

  /** Another netlink socket in the same namespace; the caller owns it. */
  openAnother(): NetlinkConnection {
    const { open, target } = this;
    return open ? open(NETLINK_SOCK_DIAG, target) : openNetlinkIn(target.netns, NETLINK_SOCK_DIAG);
  }

  [Symbol.dispose](): void {
    this.conn.close();
  }
}

/** The counters whose "inuse" counts every socket a dump of the protocol can list, by family. */
const COUNTERS: Partial<Record<InetProtocol, readonly [inet: string, inet6: string]>> = {
  tcp: ["TCP", "TCP6"],
  udp: ["UDP", "UDP6"],
  udplite: ["UDPLITE", "UDPLITE6"],
};

/**
 * The TCP states whose sockets the counters count: hashed ones in "inuse", TIME-WAIT in "tw". Not
 * SYN-RECV (request sockets, uncounted), CLOSE and BOUND-INACTIVE (bound only, in no hash the
 * counter follows): a dump asking for any of those is always made.
 */
const COUNTED_TCP_STATES =
  (1 << TCP_ESTABLISHED) |
  (1 << TCP_SYN_SENT) |
  (1 << TCP_FIN_WAIT1) |
  (1 << TCP_FIN_WAIT2) |
  (1 << TCP_TIME_WAIT) |
  (1 << TCP_CLOSE_WAIT) |
  (1 << TCP_LAST_ACK) |
  (1 << TCP_LISTEN) |
  (1 << TCP_CLOSING);

/** Whether the counters can tell that `dump` would list nothing here. */
function countable(dump: InetDump): boolean {
  if (COUNTERS[dump.protocol] === undefined) return false;
  return dump.protocol !== "tcp" || (dump.states & ~COUNTED_TCP_STATES) === 0;
}

/** Whether the namespace's counters show that `dump` would list nothing (a countable dump). */
function countedEmpty(dump: InetDump, counts: SocketCounts): boolean {
  const name = COUNTERS[dump.protocol]![dump.family === AF_INET ? 0 : 1];
  if (counts.get(name) !== 0) return false;
  return dump.protocol !== "tcp" || (dump.states & (1 << TCP_TIME_WAIT)) === 0 || counts.get("TCP tw") === 0;
}

/**
 * `plan` without the dumps of a protocol and family whose counters are 0 here. The same plan when
 * nothing is left out.
 */
function withoutEmptyDumps(plan: QueryPlan, counts: SocketCounts): QueryPlan {
  const empty = (d: InetDump) => countable(d) && countedEmpty(d, counts);
  if (!plan.inet.some(empty)) return plan;
  // Object.assign, not a spread and a property: a walk makes one in many namespaces (see
  // emptyRunReport, run/).
  return Object.assign({}, plan, { inet: plan.inet.filter((d) => !empty(d)) });
}
