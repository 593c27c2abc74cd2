/**
 * SocketWatch: sockets as the kernel frees them (ss -E). The kernel tells the sock_diag destroy
 * multicast groups of every TCP and UDP socket it frees, in the namespace the socket lived in
 * (net/core/sock_diag.c, sock_diag_broadcast_destroy): one netlink socket per namespace joins the
 * groups, and poll(2) says which have news. The messages carry struct inet_diag_msg and an
 * INET_DIAG_PROTOCOL attribute naming the protocol.
 */

import { AddressTexts } from "../diag/address.js";
import {
  INET_DIAG_PROTOCOL,
  NETLINK_SOCK_DIAG,
  SKNLGRP_INET_TCP_DESTROY,
  SKNLGRP_INET_UDP_DESTROY,
  SKNLGRP_INET6_TCP_DESTROY,
  SKNLGRP_INET6_UDP_DESTROY,
  SOCK_DIAG_BY_FAMILY,
} from "../diag/constants.js";
import { decodeInetDiagMsg } from "../diag/inet.js";
import { INET_DIAG_MSG_LEN, type InetFamily, type InetSocket, type SocketNetns } from "../diag/socket.js";
import { compileIn, type FilterInput, prepareFilter } from "../filter/index.js";
import { AttributeReader, DecodeScratch, MessageReader, type NetlinkSocket } from "../netlink/index.js";
import {
  checkNamespaceSelection,
  type NamespaceFailure,
  type NamespaceNote,
  type NamespaceSelection,
  openNetlinkIn,
  SELECTION_KEYS,
  targetsOf,
  type WalkFindings,
} from "../netns/index.js";
import { checkList, checkOptions, type KnownKeys, QueryError } from "../options/index.js";
import { recordOrThrow } from "../run/index.js";
import { IPPROTO_TCP, IPPROTO_UDP, readable } from "../sys/index.js";

/** What to watch, and where (default the caller's own namespace; "all": it and every other). */
export interface WatchQuery extends NamespaceSelection {
  /** "tcp" and/or "udp" (the protocols the kernel tells of). Default both. */
  protocols?: readonly ("tcp" | "udp")[];
  /** Default both. */
  families?: readonly InetFamily[];
  /** ss filter, checked on each socket (no kernel program applies to multicast). */
  filter?: FilterInput;
}

const WATCH_KEYS: KnownKeys<WatchQuery> = {
  protocols: true,
  families: true,
  filter: true,
  ...SELECTION_KEYS,
};

interface Watched {
  conn: NetlinkSocket;
  ref: SocketNetns | undefined;
  predicate: ((s: InetSocket) => boolean) | undefined;
}

const GROUPS = {
  tcp: { inet: SKNLGRP_INET_TCP_DESTROY, inet6: SKNLGRP_INET6_TCP_DESTROY },
  udp: { inet: SKNLGRP_INET_UDP_DESTROY, inet6: SKNLGRP_INET6_UDP_DESTROY },
} as const;

/** How often "all" looks for namespaces that appeared since. */
const RESCAN_MS = 2000;

/**
 * SocketWatch holds the subscriptions of one query. poll() hands over the sockets freed since the
 * last call; close() (or `using`) releases every netlink socket. Namespaces that fail to open are
 * in `failures` (netns "all"); with "all", namespaces that appear later are joined as well.
 */
export class SocketWatch implements Disposable {
  readonly failures: NamespaceFailure[] = [];
  /** Namespaces passed over (vanished, unreadable, a pin that holds none). */
  readonly notes: NamespaceNote[] = [];
  readonly #watched: Watched[] = [];
  readonly #seen = new Set<string>();
  /** The failures and notes told so far, by namespace and kind: each is told once. */
  readonly #told = new Set<string>();
  readonly #groups: number[];
  readonly #filter;
  readonly #query: WatchQuery;
  readonly #messages = new MessageReader();
  readonly #attrs = new AttributeReader();
  readonly #texts = new AddressTexts();
  readonly #scratch = new DecodeScratch();
  #scanned = 0;

  /** Opens every subscription now. Throws QueryError / FilterSyntaxError, and NetnsError for one namespace. */
  constructor(query: WatchQuery = {}) {
    checkOptions(query, WATCH_KEYS, "query");
    checkNamespaceSelection(query);
    this.#query = query;
    checkList(query.protocols, "protocols");
    checkList(query.families, "families");
    const protocols = query.protocols ?? ["tcp", "udp"];
    const families = query.families ?? ["inet", "inet6"];
    for (const p of protocols)
      if (p !== "tcp" && p !== "udp") throw new QueryError("protocols", String(p), "watch takes tcp and udp");
    for (const f of families)
      if (f !== "inet" && f !== "inet6")
        throw new QueryError("families", String(f), "expected inet or inet6");
    this.#groups = protocols.flatMap((p) => families.map((f) => GROUPS[p][f]));
    this.#filter = prepareFilter(query.filter, false);
    try {
      this.#scan();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * The sockets freed since the last call, waiting up to `timeoutMs` for the first (0: do not
   * wait). Throws SysError / NetlinkError when a subscription fails (e.g. ENOBUFS: the kernel told
   * of more than the queue could hold, some were lost).
   */
  poll(timeoutMs: number): InetSocket[] {
    if (this.#query.netns === "all" && Date.now() - this.#scanned >= RESCAN_MS) this.#scan();
    const out: InetSocket[] = [];
    let wait = timeoutMs;
    for (;;) {
      const ready = readable(
        this.#watched.map((w) => w.conn.fd),
        wait,
      );
      if (!ready.includes(true)) return out;
      ready.forEach((r, i) => {
        if (r) this.#read(this.#watched[i]!, out);
      });
      wait = 0;
    }
  }

  /** How many namespaces are subscribed. */
  get size(): number {
    return this.#watched.length;
  }

  close(): void {
    for (const w of this.#watched.splice(0)) w.conn.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** Subscribe in every namespace of the query not subscribed yet. */
  #scan(): void {
    this.#scanned = Date.now();
    const met = { failures: [] as NamespaceFailure[], notes: [] as NamespaceNote[] };
    try {
      this.#subscribe(met);
    } finally {
      // Every rescan walks past the entries it cannot use again (a plain file in a pin directory).
      for (const f of met.failures) if (this.#firstTime(`${f.netns}\0${f.error.code}`)) this.failures.push(f);
      for (const n of met.notes) if (this.#firstTime(`${n.netns}\0${n.skipped}`)) this.notes.push(n);
    }
  }

  /** Whether `key` (a namespace and what was met there) is told for the first time. */
  #firstTime(key: string): boolean {
    if (this.#told.has(key)) return false;
    this.#told.add(key);
    return true;
  }

  /** Subscribe in each namespace not subscribed yet; what fails goes to `met`. */
  #subscribe(met: WalkFindings): void {
    for (const target of targetsOf(this.#query, met)) {
      const key = target.netns ? `${target.netns.dev}:${target.netns.ino}` : "self";
      if (this.#seen.has(key)) continue;
      try {
        const conn = openNetlinkIn(target.netns, NETLINK_SOCK_DIAG);
        try {
          conn.subscribe(this.#groups);
          const { predicate } = compileIn(this.#filter, target.netns);
          this.#watched.push({ conn, ref: target.ref, predicate });
        } catch (err) {
          conn.close();
          throw err;
        }
        this.#seen.add(key);
      } catch (err) {
        recordOrThrow(this.#query.netns, target, err, met.failures);
        this.#seen.add(key);
      }
    }
  }

  /** One datagram of news from `w`. */
  #read(w: Watched, out: InetSocket[]): void {
    const n = w.conn.receive("watch");
    const buf = w.conn.recvBuf;
    const m = this.#messages.reset(buf, n, "watch");
    while (m.next()) {
      if (m.type !== SOCK_DIAG_BY_FAMILY || m.length < INET_DIAG_MSG_LEN) continue;
      const protocol = this.#protocolOf(buf, m.offset, m.length);
      if (!protocol) continue;
      const s = decodeInetDiagMsg(buf, m.offset, INET_DIAG_MSG_LEN, {
        protocol,
        attributes: false,
        netns: w.ref,
        texts: this.#texts,
        scratch: this.#scratch,
      });
      if (!w.predicate || w.predicate(s)) out.push(s);
    }
  }

  #protocolOf(buf: Buffer, offset: number, length: number): "tcp" | "udp" | undefined {
    const a = this.#attrs.reset(buf, offset + INET_DIAG_MSG_LEN, offset + length, "watch attributes");
    while (a.next()) {
      if (a.type !== INET_DIAG_PROTOCOL) continue;
      const p = a.u8();
      return p === IPPROTO_TCP ? "tcp" : p === IPPROTO_UDP ? "udp" : undefined;
    }
    return undefined;
  }
}
