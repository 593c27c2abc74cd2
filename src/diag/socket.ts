/**
 * The Socket model: what one sock_diag answer says about one socket. Decoders in this folder fill
 * these objects straight from the receive buffer; fixed fields are plain numbers, and the values
 * that would cost an allocation (address strings, the 64-bit cookie) are computed when first read.
 */
import { formatIPv4, formatIPv6, isV4Mapped } from "./address.js";
import { type StateName, stateName } from "./states.js";

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

/**
 * INET_DIAG_INFO for TCP: struct tcp_info, as far as the kernel sent it. Older kernels send a
 * shorter struct; fields they did not send are absent.
 */
export type TcpInfo = Partial<Record<TcpInfoField, number | bigint>>;
export type TcpInfoField = string;

/** The extensions a query can ask for; each maps to request bits and attributes in diag/. */
export type Extension = "meminfo" | "skmem" | "tcpinfo" | "cong" | "tos" | "tclass";

/** Fields common to every socket. */
interface SocketBase {
  /** The label of the network namespace this socket was listed in (undefined: the caller's own). */
  netns?: string | undefined;
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
const AF_INET6 = 10;

/**
 * InetSocket is one inet_diag_msg: a TCP, UDP, UDP-Lite, raw, MPTCP or SCTP socket.
 *
 * The fixed fields live in the message's own bytes (a copy of the receive chunk it came in, shared
 * with the other sockets of that chunk) and are read through accessors named after struct
 * inet_diag_msg. Decoding a socket is therefore one small object, however many fields it has: no
 * field is copied, and no 32-bit address word is boxed into a heap number (V8 keeps only 31-bit
 * integers unboxed). `new InetSocket()` gets a zeroed message of its own; setters write into it.
 */
export class InetSocket implements SocketBase {
  /** The label of the network namespace this socket was listed in (undefined: the caller's own). */
  netns: string | undefined;
  /** The protocol the dump asked for (inet_diag_msg does not say). */
  protocol: InetProtocol;
  readonly #view: DataView;
  readonly #at: number;

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
   * A socket over the struct inet_diag_msg at `view[offset]` (which the socket then shares, and which
   * must not change), or over a zeroed message of its own when no view is given; with the protocol
   * its dump asked for and the label of its namespace.
   */
  constructor(view?: DataView, offset = 0, protocol: InetProtocol = "tcp", netns?: string) {
    this.#view = view ?? new DataView(new ArrayBuffer(INET_DIAG_MSG_LEN));
    this.#at = view ? offset : 0;
    this.protocol = protocol;
    this.netns = netns;
  }

  get family(): InetFamily {
    return this.#view.getUint8(this.#at + FAMILY) === AF_INET6 ? "inet6" : "inet";
  }
  set family(family: InetFamily) {
    this.#view.setUint8(this.#at + FAMILY, family === "inet6" ? AF_INET6 : 2);
  }
  /** Kernel state number (idiag_state); `state` gives its ss name. */
  get stateCode(): number {
    return this.#view.getUint8(this.#at + STATE);
  }
  set stateCode(v: number) {
    this.#view.setUint8(this.#at + STATE, v);
  }
  get timer(): number {
    return this.#view.getUint8(this.#at + TIMER);
  }
  get retrans(): number {
    return this.#view.getUint8(this.#at + RETRANS);
  }
  get sport(): number {
    return this.#view.getUint16(this.#at + SPORT);
  }
  set sport(v: number) {
    this.#view.setUint16(this.#at + SPORT, v);
  }
  get dport(): number {
    return this.#view.getUint16(this.#at + DPORT);
  }
  set dport(v: number) {
    this.#view.setUint16(this.#at + DPORT, v);
  }
  /** idiag_src as four big-endian 32-bit words (IPv4 uses the first word only). */
  get src0(): number {
    return this.#view.getUint32(this.#at + SRC);
  }
  set src0(v: number) {
    this.#view.setUint32(this.#at + SRC, v);
  }
  get src1(): number {
    return this.#view.getUint32(this.#at + SRC + 4);
  }
  set src1(v: number) {
    this.#view.setUint32(this.#at + SRC + 4, v);
  }
  get src2(): number {
    return this.#view.getUint32(this.#at + SRC + 8);
  }
  set src2(v: number) {
    this.#view.setUint32(this.#at + SRC + 8, v);
  }
  get src3(): number {
    return this.#view.getUint32(this.#at + SRC + 12);
  }
  set src3(v: number) {
    this.#view.setUint32(this.#at + SRC + 12, v);
  }
  /** idiag_dst as four big-endian 32-bit words. */
  get dst0(): number {
    return this.#view.getUint32(this.#at + DST);
  }
  set dst0(v: number) {
    this.#view.setUint32(this.#at + DST, v);
  }
  get dst1(): number {
    return this.#view.getUint32(this.#at + DST + 4);
  }
  set dst1(v: number) {
    this.#view.setUint32(this.#at + DST + 4, v);
  }
  get dst2(): number {
    return this.#view.getUint32(this.#at + DST + 8);
  }
  set dst2(v: number) {
    this.#view.setUint32(this.#at + DST + 8, v);
  }
  get dst3(): number {
    return this.#view.getUint32(this.#at + DST + 12);
  }
  set dst3(v: number) {
    this.#view.setUint32(this.#at + DST + 12, v);
  }
  get ifindex(): number {
    return this.#view.getUint32(this.#at + IFINDEX, true);
  }
  set ifindex(v: number) {
    this.#view.setUint32(this.#at + IFINDEX, v, true);
  }
  /** idiag_cookie[0] and [1], host order, low word first. */
  get cookieLo(): number {
    return this.#view.getUint32(this.#at + COOKIE, true);
  }
  set cookieLo(v: number) {
    this.#view.setUint32(this.#at + COOKIE, v, true);
  }
  get cookieHi(): number {
    return this.#view.getUint32(this.#at + COOKIE + 4, true);
  }
  set cookieHi(v: number) {
    this.#view.setUint32(this.#at + COOKIE + 4, v, true);
  }
  get expires(): number {
    return this.#view.getUint32(this.#at + EXPIRES, true);
  }
  get rqueue(): number {
    return this.#view.getUint32(this.#at + RQUEUE, true);
  }
  set rqueue(v: number) {
    this.#view.setUint32(this.#at + RQUEUE, v, true);
  }
  get wqueue(): number {
    return this.#view.getUint32(this.#at + WQUEUE, true);
  }
  set wqueue(v: number) {
    this.#view.setUint32(this.#at + WQUEUE, v, true);
  }
  get uid(): number {
    return this.#view.getUint32(this.#at + UID, true);
  }
  set uid(v: number) {
    this.#view.setUint32(this.#at + UID, v, true);
  }
  get inode(): number {
    return this.#view.getUint32(this.#at + INODE, true);
  }
  set inode(v: number) {
    this.#view.setUint32(this.#at + INODE, v, true);
  }

  get state(): StateName {
    return stateName(this.stateCode);
  }

  /** The 64-bit socket cookie, unique per socket since boot (SO_COOKIE). */
  get cookie(): bigint {
    return this.#view.getBigUint64(this.#at + COOKIE, true);
  }

  /** The local address as text ("127.0.0.1", "::1", "::ffff:10.0.0.1"). */
  get src(): string {
    return this.family === "inet"
      ? formatIPv4(this.src0)
      : formatIPv6(this.src0, this.src1, this.src2, this.src3);
  }

  /** The remote address as text; "0.0.0.0" or "::" when unconnected. */
  get dst(): string {
    return this.family === "inet"
      ? formatIPv4(this.dst0)
      : formatIPv6(this.dst0, this.dst1, this.dst2, this.dst3);
  }

  /**
   * The IPv4 destination this socket talks to, as one big-endian word, if it is an IPv4 socket or an
   * IPv6 socket connected to a v4-mapped address; otherwise undefined. Used to match IPv4 backends.
   */
  get dstIPv4(): number | undefined {
    if (this.family === "inet") return this.dst0;
    return isV4Mapped(this.dst0, this.dst1, this.dst2) ? this.dst3 : undefined;
  }

  /** The plain-data form printed by `--json`: field names as in DESIGN.md, cookie as a decimal string. */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      netns: this.netns ?? null,
      family: this.family,
      protocol: this.protocol,
      state: this.state,
      src: this.src,
      sport: this.sport,
      dst: this.dst,
      dport: this.dport,
      ifindex: this.ifindex,
      cookie: this.cookieText(),
      inode: this.inode,
      uid: this.uid,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.meminfo) out.meminfo = this.meminfo;
    if (this.skmem) out.skmem = this.skmem;
    if (this.tcpinfo) out.tcpinfo = jsonSafe(this.tcpinfo);
    if (this.cong !== undefined) out.cong = this.cong;
    if (this.tos !== undefined) out.tos = this.tos;
    if (this.tclass !== undefined) out.tclass = this.tclass;
    if (this.shutdown !== undefined) out.shutdown = this.shutdown;
    if (this.mark !== undefined) out.mark = this.mark;
    if (this.cgroupId !== undefined) out.cgroupId = this.cgroupId.toString();
    if (this.v6only !== undefined) out.v6only = this.v6only;
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
      this.v6only !== undefined
    );
  }

  /** util.inspect shows the decoded fields, not the backing bytes. */
  [Symbol.for("nodejs.util.inspect.custom")](): Record<string, unknown> {
    return this.toJSON();
  }
}

export type UnixType = "stream" | "dgram" | "seqpacket";

/** UnixSocket is one unix_diag_msg with the attributes that were asked for. */
export class UnixSocket implements SocketBase {
  netns: string | undefined = undefined;
  readonly family = "unix" as const;
  readonly protocol = "unix" as const;
  type: UnixType = "stream";
  stateCode = 0;
  inode = 0;
  cookieLo = 0;
  cookieHi = 0;
  /** Bound path, or "@name" for an abstract name (leading NUL shown as "@", as ss does); undefined when unnamed. */
  name?: string;
  /** Inode of the peer socket (UNIX_DIAG_PEER). */
  peer?: number;
  /** Device and inode of the bound file (UNIX_DIAG_VFS). */
  vfs?: { dev: number; ino: number };
  /** Inodes of connections waiting to be accepted (UNIX_DIAG_ICONS). */
  icons?: number[];
  /** UNIX_DIAG_RQLEN: receive queue (or accept backlog for listeners) and write queue (or max backlog). */
  rqueue = 0;
  wqueue = 0;
  skmem?: SkMemInfo;
  shutdown?: number;
  uid?: number;

  get state(): StateName {
    return stateName(this.stateCode);
  }

  get cookie(): bigint {
    return (BigInt(this.cookieHi) << 32n) | BigInt(this.cookieLo);
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      netns: this.netns ?? null,
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
  for (const [k, v] of Object.entries(info))
    if (v !== undefined) out[k] = typeof v === "bigint" ? v.toString() : v;
  return out;
}
