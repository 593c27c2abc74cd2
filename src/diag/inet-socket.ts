/**
 * InetSocket: one struct inet_diag_msg (a TCP, UDP, UDP-Lite, raw, MPTCP or SCTP socket) as plain
 * data, filled straight from the receive buffer by diag/inet.ts, and the same struct written back
 * from a socket's fields.
 */
import { QueryError } from "../options/index.js";
import { type AddressTexts, type AddressWords, addressText, addressWords } from "./address.js";
import { AF_INET, AF_INET6 } from "./constants.js";
import { jsonSafe } from "./json-head.js";
import type { InetFamily, InetProtocol, MemInfo, SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import { type StateName, stateCode, stateName } from "./states.js";
import type { TcpInfo } from "./tcpinfo.js";

// struct inet_diag_msg offsets: __u8 idiag_family, idiag_state, idiag_timer, idiag_retrans;
// struct inet_diag_sockid id { __be16 sport, dport; __be32 src[4], dst[4]; __u32 if, cookie[2] };
// __u32 idiag_expires, idiag_rqueue, idiag_wqueue, idiag_uid, idiag_inode.
const FAMILY = 0;
const STATE = 1;
const TIMER = 2;
const RETRANS = 3;
const SPORT = 4;
const DPORT = 6;
const SRC = 8;
const DST = 24;
const IFINDEX = 40;
const COOKIE = 44;
const EXPIRES = 52;
const RQUEUE = 56;
const WQUEUE = 60;
const UID = 64;
const INODE = 68;
/** sizeof(struct inet_diag_msg). */
export const INET_DIAG_MSG_LEN = 72;

/** What a socket is built from when it did not come from a dump (see InetSocket.build). */
export interface InetSocketInit {
  family: InetFamily;
  protocol: InetProtocol;
  state?: StateName;
  /** Address texts as a socket holds them (IPv4 dotted quad, or IPv6). */
  src: string;
  sport: number;
  dst: string;
  dport: number;
  ifindex?: number;
  cookie: bigint;
  inode?: number;
  uid?: number;
  rqueue?: number;
  wqueue?: number;
  timer?: number;
  retrans?: number;
  expires?: number;
  netns?: SocketNetns | undefined;
  rawProtocol?: number | undefined;
}

/**
 * InetSocket is one inet_diag_msg as plain data.
 *
 * Every documented field is an own property, decoded when the socket is made, so that
 * `structuredClone`, `{...s}`, `postMessage` and `JSON.stringify` keep them all. A socket keeps no
 * bytes: its fields say everything its id holds, so a destroy request (writeSockId) and a message
 * for another thread (writeInetDiagMsg) are written from them, and a socket stays one object the
 * garbage collector moves cheaply.
 */
export class InetSocket implements SocketBase {
  /** The network namespace this socket was listed in (undefined: the caller's own). */
  netns: SocketNetns | undefined;
  family: InetFamily;
  /** The protocol the dump asked for (inet_diag_msg does not say). */
  protocol: InetProtocol;
  /** The ss name of idiag_state. */
  state: StateName;
  /** The local address as text ("127.0.0.1", "::1", "::ffff:10.0.0.1"). */
  src: string;
  sport: number;
  /** The remote address as text; "0.0.0.0" or "::" when unconnected. */
  dst: string;
  dport: number;
  ifindex: number;
  /** The 64-bit socket cookie, unique per socket since boot (SO_COOKIE). */
  cookie: bigint;
  inode: number;
  uid: number;
  rqueue: number;
  wqueue: number;
  /** idiag_timer, idiag_retrans, idiag_expires (ms): the pending timer ss -o shows. */
  timer: number;
  retrans: number;
  expires: number;

  // Attributes, present when the kernel sent them and they were decoded (see diag/inet.ts).
  declare meminfo?: MemInfo;
  declare skmem?: SkMemInfo;
  declare tcpinfo?: TcpInfo;
  declare cong?: string;
  declare tos?: number;
  declare tclass?: number;
  declare shutdown?: number;
  declare mark?: number;
  declare cgroupId?: bigint;
  declare v6only?: boolean;
  /** INET_DIAG_PROTOCOL: the IP protocol of a raw socket. */
  declare rawProtocol?: number;

  /**
   * The socket of the struct inet_diag_msg at `view[offset]`, with the protocol its dump asked for
   * and its namespace. `texts` remembers the addresses formatted for the sockets before it.
   */
  constructor(
    view: DataView,
    offset: number,
    protocol: InetProtocol,
    netns: SocketNetns | undefined,
    texts?: AddressTexts,
  ) {
    const v6 = view.getUint8(offset + FAMILY) === AF_INET6;
    this.netns = netns;
    this.family = v6 ? "inet6" : "inet";
    this.protocol = protocol;
    this.state = stateName(view.getUint8(offset + STATE));
    this.src = texts ? texts.src(view, offset + SRC, v6) : addressText(view, offset + SRC, v6);
    this.sport = view.getUint16(offset + SPORT);
    this.dst = texts ? texts.dst(view, offset + DST, v6) : addressText(view, offset + DST, v6);
    this.dport = view.getUint16(offset + DPORT);
    this.ifindex = view.getUint32(offset + IFINDEX, true);
    this.cookie = view.getBigUint64(offset + COOKIE, true);
    this.inode = view.getUint32(offset + INODE, true);
    this.uid = view.getUint32(offset + UID, true);
    this.rqueue = view.getUint32(offset + RQUEUE, true);
    this.wqueue = view.getUint32(offset + WQUEUE, true);
    this.timer = view.getUint8(offset + TIMER);
    this.retrans = view.getUint8(offset + RETRANS);
    this.expires = view.getUint32(offset + EXPIRES, true);
  }

  /**
   * A socket from its fields, made as a dump makes one (the same shape, addresses in the same
   * canonical text). Throws DecodeError for an address that is not one of its family's.
   */
  static build(init: InetSocketInit): InetSocket {
    writeInetDiagMsg(buildView, 0, init);
    const s = new InetSocket(buildView, 0, init.protocol, init.netns);
    if (init.rawProtocol !== undefined) s.rawProtocol = init.rawProtocol;
    return s;
  }

  /** Kernel state number (idiag_state) of `state`; 0 for "unknown", whatever number the kernel sent. */
  get stateCode(): number {
    return stateCode(this.state);
  }

  /** idiag_src: the local address as four big-endian words (IPv4: the first; the rest 0). */
  get srcWords(): Readonly<AddressWords> {
    return wordsOf(this.src, this.family, "src");
  }

  /** idiag_dst, as srcWords. */
  get dstWords(): Readonly<AddressWords> {
    return wordsOf(this.dst, this.family, "dst");
  }

  /** The JSON form printed by `--json`: the CLI's JSON field names, cookie as a decimal string. */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { ...(this as object) };
    out.netns = this.netns?.label ?? null;
    out.cookie = this.cookie.toString();
    if (this.tcpinfo) out.tcpinfo = jsonSafe(this.tcpinfo);
    if (this.cgroupId !== undefined) out.cgroupId = this.cgroupId.toString();
    return out;
  }

  /** Whether any attribute (extension, mark, cgroup, ...) was decoded: toJSON then has more fields. */
  get hasAttributes(): boolean {
    return (
      this.meminfo !== undefined ||
      this.skmem !== undefined ||
      this.tcpinfo !== undefined ||
      this.cong !== undefined ||
      this.tos !== undefined ||
      this.tclass !== undefined ||
      this.shutdown !== undefined ||
      this.mark !== undefined ||
      this.cgroupId !== undefined ||
      this.v6only !== undefined ||
      this.rawProtocol !== undefined
    );
  }
}

const buildView = new DataView(new ArrayBuffer(INET_DIAG_MSG_LEN));

/**
 * Write the struct inet_diag_msg of `s` at `view[at]` (72 bytes): the inverse of the InetSocket
 * constructor, field for field. Throws DecodeError for an address that is not one of its family's.
 */
export function writeInetDiagMsg(view: DataView, at: number, s: InetSocketInit): void {
  view.setUint8(at + FAMILY, s.family === "inet6" ? AF_INET6 : AF_INET);
  view.setUint8(at + STATE, s.state === undefined ? 0 : stateCode(s.state));
  view.setUint8(at + TIMER, s.timer ?? 0);
  view.setUint8(at + RETRANS, s.retrans ?? 0);
  writeSockId(view, at + SPORT, s);
  view.setUint32(at + EXPIRES, s.expires ?? 0, true);
  view.setUint32(at + RQUEUE, s.rqueue ?? 0, true);
  view.setUint32(at + WQUEUE, s.wqueue ?? 0, true);
  view.setUint32(at + UID, s.uid ?? 0, true);
  view.setUint32(at + INODE, s.inode ?? 0, true);
}

/**
 * Write the struct inet_diag_sockid of `s` at `view[at]` (48 bytes): ports, addresses, interface
 * and cookie, the id the kernel sent (IPv4 sockets have words 1 to 3 zero, as the kernel sends
 * them). What a destroy request names the socket by.
 */
export function writeSockId(
  view: DataView,
  at: number,
  s: Pick<InetSocketInit, "family" | "src" | "sport" | "dst" | "dport" | "ifindex" | "cookie">,
): void {
  const src = wordsOf(s.src, s.family, "src");
  const dst = wordsOf(s.dst, s.family, "dst");
  const o = at - SPORT;
  view.setUint16(o + SPORT, s.sport);
  view.setUint16(o + DPORT, s.dport);
  for (let i = 0; i < 4; i++) {
    view.setUint32(o + SRC + 4 * i, src[i]!);
    view.setUint32(o + DST + 4 * i, dst[i]!);
  }
  view.setUint32(o + IFINDEX, s.ifindex ?? 0, true);
  view.setBigUint64(o + COOKIE, s.cookie, true);
}

/** What a field of a socket's id holds that cannot name a socket of its family. */
export interface IdFault {
  field: "src" | "dst" | "sport" | "dport" | "cookie";
  text: string;
  /** E.g. "not an IPv4 address". */
  reason: string;
}

/** The largest cookie the kernel gives: 2^64-1 (both words INET_DIAG_NOCOOKIE) tells it to check none. */
const MAX_COOKIE = (1n << 64n) - 2n;

/**
 * The first field of `s`'s id that a destroy request could not carry as it is — an address not of
 * its family, a port outside 0-65535, a cookie the kernel never gives (the id's fields would be
 * cut to their width, and a cookie of all ones, -1n so cut, skips the kernel's cookie check:
 * another socket on the same 4-tuple would be hit) — if one is such.
 */
export function idFault(
  s: Pick<InetSocketInit, "family" | "src" | "dst" | "sport" | "dport" | "cookie">,
): IdFault | undefined {
  for (const field of ["src", "dst"] as const) {
    const text = s[field];
    if (typeof text !== "string" || !addressWords(text, s.family === "inet6"))
      return { field, text: String(text), reason: `not ${ADDRESS_OF[s.family]}` };
  }
  for (const field of ["sport", "dport"] as const) {
    const port = s[field];
    if (!Number.isInteger(port) || port < 0 || port > 0xffff)
      return { field, text: String(port), reason: "not a port from 0 to 65535" };
  }
  const { cookie } = s;
  if (typeof cookie !== "bigint" || cookie < 0n || cookie > MAX_COOKIE)
    return {
      field: "cookie",
      text: typeof cookie === "bigint" ? `${cookie}n` : String(cookie),
      reason:
        "not a cookie the kernel gives: a bigint from 0 to 2^64-2 (2^64-1, or -1n, is INET_DIAG_NOCOOKIE, which would skip the kernel's cookie check)",
    };
  return undefined;
}

const ADDRESS_OF: Record<InetFamily, string> = { inet: "an IPv4 address", inet6: "an IPv6 address" };

function wordsOf(text: string, family: InetFamily, side: "src" | "dst"): Readonly<AddressWords> {
  const words = addressWords(text, family === "inet6");
  if (words === undefined) throw new QueryError(`socket.${side}`, text, `not ${ADDRESS_OF[family]}`);
  return words;
}
