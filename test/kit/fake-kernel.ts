/**
 * FakeKernel: a NetlinkOpener whose connections answer as the kernel would for namespaces that
 * exist only in a test — each named by the label of a target the test's own source gives (the host
 * is "(host)"). Per namespace it holds a table of inet sockets and one of conntrack entries, and
 * answers, on FakeNetlink connections:
 * - sock_diag (NETLINK_SOCK_DIAG): SOCK_DIAG_BY_FAMILY dumps with an inet_diag_msg per socket of
 *   the request's family and protocol (include/uapi/linux/inet_diag.h) and NLMSG_DONE, and
 *   SOCK_DESTROY with an errors-only answer, taking the socket out of the table (ENOENT for one
 *   not in it);
 * - ctnetlink (NETLINK_NETFILTER): IPCTNL_MSG_CT_GET_STATS with the table's count, IPCTNL_MSG_CT_GET
 *   dumps with an IPCTNL_MSG_CT_NEW per entry of the request's family, IPCTNL_MSG_CT_DELETE by
 *   CTA_ID, errors-only;
 * - NLMSG_NOOP barriers: acked.
 * The fake applies no filter bytecode: a table holds the sockets and entries the filter would let
 * through. Faults are per namespace and per item: an errno for a socket's destroy or an entry's
 * delete, a dump that ends after so many items with an error in NLMSG_DONE (as netlink_dump
 * reports a dump callback's failure), a namespace that cannot be opened. Answers are built with
 * the independent test builders (test/diag/layout.ts, test/ctnl/ct-layout.ts).
 */
import type { NetlinkOpener, Target } from "../../src/netns/index.js";
import { targetLabel } from "../../src/netns/index.js";
import { familyOf as entryFamily, entryMessage, statsMessage, T, type TestEntry } from "../ctnl/ct-layout.js";
import { INET_DIAG_MSG, pack } from "../diag/layout.js";
import { doneAnswer, errorAnswer, FakeNetlink, partAnswer, type SentMessage } from "./fake-netlink.js";
import { parseIPv4, parseIPv6 } from "./sockaddr.js";

const NETLINK_SOCK_DIAG = 4;
const NETLINK_NETFILTER = 12;
const SOCK_DIAG_BY_FAMILY = 20;
const SOCK_DESTROY = 21;
const NLM_F_ACK = 0x4;
const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO: Record<FakeSocket["protocol"], number> = { tcp: 6, udp: 17 };
const TCP_ESTABLISHED = 1;
const ENOENT = 2;
const EIO = 5;
const CTA_ID = 12;

/** An inet socket in a fake namespace's table (a UDP one "connected": state 1, as the kernel shows it). */
export interface FakeSocket {
  family: "inet" | "inet6";
  protocol: "udp" | "tcp";
  src: string;
  sport: number;
  dst: string;
  dport: number;
  /** The socket's cookie: unique across the fake's namespaces. */
  cookie: number;
}

/** One namespace of the fake: its tables and the faults it injects. */
export interface FakeNamespace {
  sockets?: FakeSocket[];
  entries?: TestEntry[];
  /**
   * The errno SOCK_DESTROY gets for a socket (0: destroyed; ENOENT: it closed since the dump, and
   * is gone from the table).
   */
  destroyErrno?: (s: FakeSocket) => number;
  /** The errno IPCTNL_MSG_CT_DELETE gets for an entry (0: deleted; ENOENT: it expired since the dump). */
  deleteErrno?: (e: TestEntry) => number;
  /** A sock_diag dump answers this many sockets, then ends with `dumpErrno`. */
  dumpFailsAfter?: number;
  /** A conntrack dump answers this many entries, then ends with `dumpErrno`. */
  conntrackDumpFailsAfter?: number;
  /** The errno of a dump that fails mid-way. Default EIO. */
  dumpErrno?: number;
  /** Thrown when a connection is opened there (a namespace that cannot be entered, no conntrack). */
  openError?: (protocol: number) => Error | undefined;
}

/** A fake kernel over named namespaces: `open` is the seam's opener. */
export class FakeKernel {
  /** Every connection opened, with the label and protocol it was opened for. */
  readonly opened: { netns: string; protocol: number; conn: FakeNetlink }[] = [];
  readonly namespaces: Map<string, FakeNamespace>;

  constructor(namespaces: Record<string, FakeNamespace>) {
    this.namespaces = new Map(Object.entries(namespaces));
  }

  /** The NetlinkOpener: a connection answering for the namespace the target's label names. */
  readonly open: NetlinkOpener = (protocol: number, target: Target) => {
    const name = targetLabel(target);
    const ns = this.namespaces.get(name);
    if (!ns) throw new Error(`the fake kernel has no namespace ${name}`);
    const refused = ns.openError?.(protocol);
    if (refused) throw refused;
    const respond =
      protocol === NETLINK_SOCK_DIAG
        ? (m: SentMessage) => sockDiag(ns, m)
        : protocol === NETLINK_NETFILTER
          ? (m: SentMessage) => ctnetlink(ns, m)
          : undefined;
    if (!respond) throw new Error(`the fake kernel has no netlink protocol ${protocol}`);
    const conn = new FakeNetlink({ respond });
    this.opened.push({ netns: name, protocol, conn });
    return conn;
  };

  /** The messages of `type` sent in namespace `netns` on connections of `protocol`. */
  sent(netns: string, protocol: number, type: number): SentMessage[] {
    return this.opened
      .filter((o) => o.netns === netns && o.protocol === protocol)
      .flatMap((o) => o.conn.sent.filter((m) => m.type === type));
  }

  /** Whether every connection opened was closed. */
  get allClosed(): boolean {
    return this.opened.every((o) => o.conn.closed);
  }
}

/** The labels of the fake's protocols and message types, for tests that count what was sent. */
export const FAKE = {
  SOCK_DIAG: NETLINK_SOCK_DIAG,
  NETFILTER: NETLINK_NETFILTER,
  DUMP: SOCK_DIAG_BY_FAMILY,
  DESTROY: SOCK_DESTROY,
  CT_DUMP: T.GET,
  CT_DELETE: T.DELETE,
} as const;

/** What sock_diag answers to `m`. */
function sockDiag(ns: FakeNamespace, m: SentMessage): Buffer[] {
  if (m.type === SOCK_DIAG_BY_FAMILY) {
    const family = m.payload[0] === AF_INET ? "inet" : "inet6";
    const protocol = m.payload[1];
    const listed = (ns.sockets ?? []).filter((s) => s.family === family && IPPROTO[s.protocol] === protocol);
    const cut = ns.dumpFailsAfter;
    const parts = listed.slice(0, cut).map((s) => partAnswer(m, SOCK_DIAG_BY_FAMILY, diagMsg(s)));
    return [...parts, doneAnswer(m, cut === undefined ? 0 : -(ns.dumpErrno ?? EIO))];
  }
  if (m.type === SOCK_DESTROY) {
    // struct inet_diag_req_v2: the sockid at byte 8, its cookie at 40 within it.
    const cookie = m.payload.readUInt32LE(48) + m.payload.readUInt32LE(52) * 2 ** 32;
    const sockets = ns.sockets ?? [];
    const i = sockets.findIndex((s) => s.cookie === cookie);
    const errno = i < 0 ? ENOENT : (ns.destroyErrno?.(sockets[i]!) ?? 0);
    if (errno === 0 || (i >= 0 && errno === ENOENT)) sockets.splice(i, 1);
    return answer(m, errno);
  }
  return answer(m, 0);
}

/** What ctnetlink answers to `m`. */
function ctnetlink(ns: FakeNamespace, m: SentMessage): Buffer[] {
  const entries = ns.entries ?? [];
  if (m.type === T.GET_STATS) return [statsMessage(entries.length, m.seq), errorAnswer(m, 0)];
  if (m.type === T.GET) {
    const family = m.payload[0];
    const listed = entries.filter((e) => entryFamily(e) === family);
    const cut = ns.conntrackDumpFailsAfter;
    const parts = listed.slice(0, cut).map((e) => entryMessage(e, m.seq));
    return [...parts, doneAnswer(m, cut === undefined ? 0 : -(ns.dumpErrno ?? EIO))];
  }
  if (m.type === T.DELETE) {
    const id = attributeU32BE(m.payload, 4, CTA_ID);
    const i = entries.findIndex((e) => e.id === id);
    const errno = i < 0 ? ENOENT : (ns.deleteErrno?.(entries[i]!) ?? 0);
    if (errno === 0 || (i >= 0 && errno === ENOENT)) entries.splice(i, 1);
    return answer(m, errno);
  }
  return answer(m, 0);
}

/**
 * The answer to a request (a destroy, a delete, a NOOP barrier) as netlink_rcv_skb gives it: its
 * error, or an ack only if it asked for one.
 */
function answer(m: SentMessage, errno: number): Buffer[] {
  return errno !== 0 || m.flags & NLM_F_ACK ? [errorAnswer(m, errno)] : [];
}

/** inet_diag_msg for `s`: the sockid's ports and addresses in network order, the cookie in host order. */
function diagMsg(s: FakeSocket): Buffer {
  const msg = pack(INET_DIAG_MSG, {
    idiag_family: s.family === "inet" ? AF_INET : AF_INET6,
    idiag_state: TCP_ESTABLISHED,
    "id.idiag_sport": s.sport,
    "id.idiag_dport": s.dport,
    "id.idiag_cookie[0]": s.cookie % 2 ** 32,
    "id.idiag_cookie[1]": Math.floor(s.cookie / 2 ** 32),
  });
  const address = (a: string) => (s.family === "inet" ? parseIPv4(a) : parseIPv6(a));
  // inet_diag_sockid at byte 4: src at 4, dst at 20 within it.
  address(s.src).copy(msg, 8);
  address(s.dst).copy(msg, 24);
  return msg;
}

/** The big-endian u32 attribute `type` among the attributes from `offset` (0 if absent). */
function attributeU32BE(payload: Buffer, offset: number, type: number): number {
  for (let o = offset; o + 4 <= payload.length; ) {
    const len = payload.readUInt16LE(o);
    if (len < 4) break;
    if ((payload.readUInt16LE(o + 2) & 0x3fff) === type) return payload.readUInt32BE(o + 4);
    o += (len + 3) & ~3;
  }
  return 0;
}
