/**
 * InetSocket: one struct inet_diag_msg (a TCP, UDP, UDP-Lite, raw, MPTCP or SCTP socket) as plain
 * data, filled straight from the receive buffer by diag/inet.ts.
 */
import { type AddressTexts, addressText, isV4Mapped } from "./address.js";
import { AF_INET, AF_INET6 } from "./constants.js";
import type { InetFamily, InetProtocol, MemInfo, SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import { type StateName, stateName } from "./states.js";
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
const INET_DIAG_SOCKID_LEN = 48;

/** What a socket needs to be built from fields instead of bytes (see InetSocket.build). */
export interface InetSocketInit {
  family: InetFamily;
  protocol: InetProtocol;
  stateCode?: number;
  sport: number;
  dport: number;
  /** idiag_src / idiag_dst as four big-endian words (IPv4: the first word). */
  srcWords: readonly number[];
  dstWords: readonly number[];
  ifindex?: number;
  cookie: bigint;
  inode?: number;
  uid?: number;
  rqueue?: number;
  wqueue?: number;
  netns?: SocketNetns | undefined;
  rawProtocol?: number | undefined;
}

/**
 * InetSocket is one inet_diag_msg as plain data.
 *
 * Every documented field is an own property, decoded when the socket is made, so that
 * `structuredClone`, `{...s}`, `postMessage` and `JSON.stringify` keep them all. The message's own
 * bytes stay attached (privately, so clones do not carry them): a destroy request copies the socket
 * id from them exactly as the kernel sent it, and the filter reads address words without parsing
 * text. A socket rebuilt from a clone gets them back from its fields (sockets/ does that).
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
  readonly #view: DataView;
  readonly #at: number;
  readonly #length: number;

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
   * The socket of the struct inet_diag_msg at `view[offset]` (which the socket keeps and which must
   * not change), `length` bytes with its attributes, with the protocol its dump asked for and its
   * namespace. `texts` remembers the addresses formatted for the sockets before it.
   */
  constructor(
    view: DataView,
    offset: number,
    protocol: InetProtocol,
    netns: SocketNetns | undefined,
    texts?: AddressTexts,
    length = INET_DIAG_MSG_LEN,
  ) {
    this.#view = view;
    this.#at = offset;
    this.#length = length;
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

  /** A socket from its fields, with a message of its own holding the same id. */
  static build(init: InetSocketInit): InetSocket {
    const view = new DataView(new ArrayBuffer(INET_DIAG_MSG_LEN));
    view.setUint8(FAMILY, init.family === "inet6" ? AF_INET6 : AF_INET);
    view.setUint8(STATE, init.stateCode ?? 0);
    view.setUint16(SPORT, init.sport);
    view.setUint16(DPORT, init.dport);
    for (let i = 0; i < 4; i++) {
      view.setUint32(SRC + 4 * i, init.srcWords[i] ?? 0);
      view.setUint32(DST + 4 * i, init.dstWords[i] ?? 0);
    }
    view.setUint32(IFINDEX, init.ifindex ?? 0, true);
    view.setBigUint64(COOKIE, init.cookie, true);
    view.setUint32(RQUEUE, init.rqueue ?? 0, true);
    view.setUint32(WQUEUE, init.wqueue ?? 0, true);
    view.setUint32(UID, init.uid ?? 0, true);
    view.setUint32(INODE, init.inode ?? 0, true);
    const s = new InetSocket(view, 0, init.protocol, init.netns);
    if (init.rawProtocol !== undefined) s.rawProtocol = init.rawProtocol;
    return s;
  }

  /** Kernel state number (idiag_state) as sent. */
  get stateCode(): number {
    return this.#view.getUint8(this.#at + STATE);
  }

  /** idiag_src[i] (0 to 3), a big-endian 32-bit word as sent; an IPv4 address is word 0. */
  srcWord(i: number): number {
    return this.#view.getUint32(this.#at + SRC + 4 * i);
  }

  /** idiag_dst[i] (0 to 3), as srcWord. */
  dstWord(i: number): number {
    return this.#view.getUint32(this.#at + DST + 4 * i);
  }

  /** idiag_cookie[0] and [1], host order, low word first, as sent. */
  get cookieLo(): number {
    return this.#view.getUint32(this.#at + COOKIE, true);
  }
  get cookieHi(): number {
    return this.#view.getUint32(this.#at + COOKIE + 4, true);
  }

  /**
   * The bytes of struct inet_diag_sockid exactly as the kernel sent them (48 bytes, a view: do not
   * change them): what a destroy request names the socket by.
   */
  get idBytes(): Uint8Array {
    const v = this.#view;
    return new Uint8Array(v.buffer, v.byteOffset + this.#at + SPORT, INET_DIAG_SOCKID_LEN);
  }

  /**
   * The whole message as the kernel sent it, attributes included (a view: do not change it); with
   * the protocol and label, what decodes into this socket again.
   */
  get messageBytes(): Uint8Array {
    const v = this.#view;
    return new Uint8Array(v.buffer, v.byteOffset + this.#at, this.#length);
  }

  /**
   * The IPv4 destination this socket talks to, as one big-endian word, if it is an IPv4 socket or an
   * IPv6 socket connected to a v4-mapped address; otherwise undefined. Used to match IPv4 backends.
   */
  get dstIPv4(): number | undefined {
    if (this.family === "inet") return this.dstWord(0);
    return isV4Mapped(this.dstWord(0), this.dstWord(1), this.dstWord(2)) ? this.dstWord(3) : undefined;
  }

  /** The JSON form printed by `--json`: the CLI's JSON field names, cookie as a decimal string. */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { ...(this as object) };
    out.netns = this.netns?.label ?? null;
    out.cookie = this.cookieText();
    if (this.tcpinfo) out.tcpinfo = jsonSafe(this.tcpinfo);
    if (this.cgroupId !== undefined) out.cgroupId = this.cgroupId.toString();
    return out;
  }

  /** The cookie in decimal, without a bigint where the number is exact as a double (always, in practice). */
  cookieText(): string {
    const hi = this.cookieHi;
    if (hi < 0x200000) return String(hi * 4294967296 + this.cookieLo);
    return this.cookie.toString();
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

function jsonSafe(info: TcpInfo): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(info) as [string, number | bigint | undefined][])
    if (v !== undefined) out[k] = typeof v === "bigint" ? v.toString() : v;
  return out;
}
