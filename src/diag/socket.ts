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

/**
 * InetSocket is one inet_diag_msg: a TCP, UDP, UDP-Lite, raw, MPTCP or SCTP socket.
 * The raw fields mirror struct inet_diag_msg; `src`, `dst` and `cookie` are formatted on first use.
 */
export class InetSocket implements SocketBase {
  netns: string | undefined = undefined;
  family: InetFamily = "inet";
  protocol: InetProtocol = "tcp";
  /** Kernel state number (idiag_state); `state` gives its ss name. */
  stateCode = 0;
  timer = 0;
  retrans = 0;
  sport = 0;
  dport = 0;
  /** idiag_src/idiag_dst as four big-endian 32-bit words each (IPv4 uses the first word only). */
  src0 = 0;
  src1 = 0;
  src2 = 0;
  src3 = 0;
  dst0 = 0;
  dst1 = 0;
  dst2 = 0;
  dst3 = 0;
  ifindex = 0;
  /** idiag_cookie[0] and [1], host order, low word first. */
  cookieLo = 0;
  cookieHi = 0;
  expires = 0;
  rqueue = 0;
  wqueue = 0;
  uid = 0;
  inode = 0;

  // Attributes, present when the kernel sent them (some only when asked for; see diag/inet.ts).
  meminfo?: MemInfo;
  skmem?: SkMemInfo;
  tcpinfo?: TcpInfo;
  cong?: string;
  tos?: number;
  tclass?: number;
  shutdown?: number;
  mark?: number;
  cgroupId?: bigint;
  v6only?: boolean;
  /** INET_DIAG_PROTOCOL: the IP protocol of a raw socket. */
  rawProtocol?: number;

  get state(): StateName {
    return stateName(this.stateCode);
  }

  /** The 64-bit socket cookie, unique per socket since boot (SO_COOKIE). */
  get cookie(): bigint {
    return (BigInt(this.cookieHi) << 32n) | BigInt(this.cookieLo);
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
      cookie: this.cookie.toString(),
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
