/**
 * The Socket model: what one sock_diag answer says about one socket, as plain data. Decoders in
 * this folder fill these objects straight from the receive buffer.
 */

import { formatIPv4, formatIPv6, isV4Mapped } from "./address.js";
import { AF_INET, AF_INET6 } from "./constants.js";
import { type StateName, stateName } from "./states.js";
import type { TcpInfo } from "./tcpinfo.js";

/** An inet protocol sockdiag can ask the kernel about. */
export type InetProtocol = "tcp" | "udp" | "udplite" | "raw" | "mptcp" | "sctp";
/** Any protocol sockdiag can ask about. */
export type Protocol = InetProtocol | "unix";
export type InetFamily = "inet" | "inet6";

/** INET_DIAG_MEMINFO (struct inet_diag_meminfo). */
export interface MemInfo {
  rmem: number;
  wmem: number;
  fmem: number;
  tmem: number;
}

/** INET_DIAG_SKMEMINFO / UNIX_DIAG_MEMINFO (u32 array indexed by SK_MEMINFO_*); drops is absent on old kernels. */
export interface SkMemInfo {
  rmemAlloc: number;
  rcvbuf: number;
  wmemAlloc: number;
  sndbuf: number;
  fwdAlloc: number;
  wmemQueued: number;
  optmem: number;
  backlog: number;
  drops?: number;
}

export type { TcpInfo } from "./tcpinfo.js";

/** The extensions a query can ask for; each maps to request bits and attributes in diag/. */
export type Extension = "meminfo" | "skmem" | "tcpinfo" | "cong" | "tos" | "tclass";

/**
 * The network namespace a socket was listed in, as plain data: what it is called, its identity
 * (st_dev, st_ino of its nsfs file) and the ways to open it again — netns/'s NetnsRef, which reopens
 * it only if the identity still matches.
 */
export interface SocketNetns {
  /** What messages and results call it: its pinned name, its path, "pid:N", or "net:[ino]". */
  label: string;
  dev: number;
  ino: number;
  /** Its pinned name, when it was found pinned. */
  name?: string;
  /** A namespace file that led to it: a pin, or a path the caller gave. */
  path?: string;
  /** A process that was in it (its /proc/PID/ns/net). */
  pid?: number;
}

/** Fields common to every socket. */
interface SocketBase {
  /** The network namespace this socket was listed in (undefined: the caller's own). */
  netns?: SocketNetns | undefined;
  readonly inode: number;
  readonly cookie: bigint;
  readonly state: StateName;
}

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
 * InetSocket is one inet_diag_msg: a TCP, UDP, UDP-Lite, raw, MPTCP or SCTP socket, as plain data.
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
   * not change), with the protocol its dump asked for and the label of its namespace. `texts`
   * remembers the last addresses formatted, which consecutive sockets of a dump usually share.
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
  /** idiag_src as four big-endian 32-bit words (IPv4 uses the first word only), as sent. */
  get src0(): number {
    return this.#view.getUint32(this.#at + SRC);
  }
  get src1(): number {
    return this.#view.getUint32(this.#at + SRC + 4);
  }
  get src2(): number {
    return this.#view.getUint32(this.#at + SRC + 8);
  }
  get src3(): number {
    return this.#view.getUint32(this.#at + SRC + 12);
  }
  /** idiag_dst as four big-endian 32-bit words, as sent. */
  get dst0(): number {
    return this.#view.getUint32(this.#at + DST);
  }
  get dst1(): number {
    return this.#view.getUint32(this.#at + DST + 4);
  }
  get dst2(): number {
    return this.#view.getUint32(this.#at + DST + 8);
  }
  get dst3(): number {
    return this.#view.getUint32(this.#at + DST + 12);
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
    if (this.family === "inet") return this.dst0;
    return isV4Mapped(this.dst0, this.dst1, this.dst2) ? this.dst3 : undefined;
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

/**
 * AddressTexts formats the addresses of a run of sockets, reusing the text of the previous socket's
 * address when the words are the same (sockets of one dump mostly share their local address, and
 * often their remote one): listing 100,000 sockets builds few strings.
 */
export class AddressTexts {
  #src = new LastAddress();
  #dst = new LastAddress();
  src(view: DataView, at: number, v6: boolean): string {
    return this.#src.text(view, at, v6);
  }
  dst(view: DataView, at: number, v6: boolean): string {
    return this.#dst.text(view, at, v6);
  }
}

function addressText(view: DataView, at: number, v6: boolean): string {
  if (!v6) return formatIPv4(view.getUint32(at));
  return formatIPv6(
    view.getUint32(at),
    view.getUint32(at + 4),
    view.getUint32(at + 8),
    view.getUint32(at + 12),
  );
}

class LastAddress {
  #v6 = false;
  #w0 = -1;
  #w1 = 0;
  #w2 = 0;
  #w3 = 0;
  #text = "";
  text(view: DataView, at: number, v6: boolean): string {
    const w0 = view.getInt32(at);
    if (!v6) {
      if (!this.#v6 && w0 === this.#w0) return this.#text;
      this.#v6 = false;
      this.#w0 = w0;
      this.#text = formatIPv4(w0 >>> 0);
      return this.#text;
    }
    const w1 = view.getInt32(at + 4);
    const w2 = view.getInt32(at + 8);
    const w3 = view.getInt32(at + 12);
    if (this.#v6 && w0 === this.#w0 && w1 === this.#w1 && w2 === this.#w2 && w3 === this.#w3)
      return this.#text;
    this.#v6 = true;
    this.#w0 = w0;
    this.#w1 = w1;
    this.#w2 = w2;
    this.#w3 = w3;
    this.#text = formatIPv6(w0 >>> 0, w1 >>> 0, w2 >>> 0, w3 >>> 0);
    return this.#text;
  }
}

export type UnixType = "stream" | "dgram" | "seqpacket";

/** UnixSocket is one unix_diag_msg with the attributes that were asked for, as plain data. */
export class UnixSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "unix" as const;
  readonly protocol = "unix" as const;
  type: UnixType;
  state: StateName;
  inode: number;
  cookie: bigint;
  /** UNIX_DIAG_RQLEN: receive queue (or accept backlog for listeners) and write queue (or max backlog). */
  rqueue = 0;
  wqueue = 0;
  /** Bound path, or "@name" for an abstract name (leading NUL shown as "@", as ss does); undefined when unnamed. */
  declare name?: string;
  /** Inode of the peer socket (UNIX_DIAG_PEER). */
  declare peer?: number;
  /** Device and inode of the bound file (UNIX_DIAG_VFS). */
  declare vfs?: { dev: number; ino: number };
  /** Inodes of connections waiting to be accepted (UNIX_DIAG_ICONS). */
  declare icons?: number[];
  declare skmem?: SkMemInfo;
  declare shutdown?: number;
  declare uid?: number;

  constructor(type: UnixType, stateCode: number, inode: number, cookie: bigint) {
    this.type = type;
    this.state = stateName(stateCode);
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      netns: this.netns?.label ?? null,
      family: this.family,
      protocol: this.protocol,
      type: this.type,
      state: this.state,
      name: this.name ?? null,
      peer: this.peer ?? null,
      cookie: this.cookie.toString(),
      inode: this.inode,
      uid: this.uid ?? null,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.vfs) out.vfs = this.vfs;
    if (this.icons) out.icons = this.icons;
    if (this.skmem) out.skmem = this.skmem;
    if (this.shutdown !== undefined) out.shutdown = this.shutdown;
    return out;
  }
}

/** Any socket sockdiag lists. Narrow on `family` ("unix" or an inet family). */
export type Socket = InetSocket | UnixSocket;

function jsonSafe(info: TcpInfo): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(info) as [string, number | bigint | undefined][])
    if (v !== undefined) out[k] = typeof v === "bigint" ? v.toString() : v;
  return out;
}
