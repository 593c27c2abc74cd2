/**
 * The holder's wire protocol: what the parent (holder.ts) and the child (holder-main.ts) say to each
 * other, one JSON object per line. Also the socket specs and the record each held socket is reported as.
 */
import type { StateName } from "../../src/diag/states.js";
import type { Endpoint, InetFamily } from "./sockaddr.js";

/** Where an inet socket binds. A port range gives socket i of a batch the port `from + i`. */
export interface BindSpec {
  /** Local address; default the family's wildcard ("0.0.0.0" or "::"). */
  address?: string;
  /** 0 or absent: the kernel picks an ephemeral port. */
  port?: number | { from: number; to: number };
}

/**
 * A UDP or UDP-Lite socket (IPPROTO_UDPLITE 136), bound or not, connected or not. The family defaults
 * to the family of the bind or connect address, else "inet"; an IPv4 connect address on an "inet6"
 * socket is used in its v4-mapped form ::ffff:a.b.c.d.
 */
export interface DatagramSpec {
  kind: "udp";
  protocol?: "udp" | "udplite";
  family?: InetFamily;
  /** SO_REUSEPORT before bind: sockets of one uid may then share the address and port. */
  reusePort?: boolean;
  bind?: BindSpec;
  connect?: Endpoint;
}

/**
 * A raw socket (SOCK_RAW, needs CAP_NET_RAW) of IP protocol `ipProtocol`, bound to an address or
 * not, connected or not. Its "port" is the protocol number (inet_num), as ss and sock_diag show it.
 */
export interface RawSpec {
  kind: "raw";
  ipProtocol: number;
  family?: InetFamily;
  bind?: { address: string };
  connect?: { address: string };
}

/** A TCP or MPTCP (IPPROTO_MPTCP 262) listener. */
export interface ListenerSpec {
  kind: "listener";
  protocol?: "tcp" | "mptcp";
  family?: InetFamily;
  bind?: BindSpec;
  /** listen(2) backlog; default 4096. */
  backlog?: number;
}

/** A unix socket, named (a path, or "\0abstract") or unnamed, listening or not. */
export interface UnixSpec {
  kind: "unix";
  type: UnixType;
  /** With count > 1, socket i binds `name + i`. Absent: unnamed. */
  name?: string;
  /** listen(2) (stream and seqpacket only). */
  listen?: boolean;
}

/**
 * Connections to a listener this holder holds (`listener` is its id): each yields the client and the
 * accepted server socket, in that order. For a unix dgram target (a bound dgram socket) only the
 * connected client exists. `family` chooses the client's family ("inet6" reaches an IPv4 listener
 * through ::ffff:a.b.c.d); a wildcard listener is reached through loopback.
 */
export interface ConnectionSpec {
  kind: "connection";
  listener: number;
  family?: InetFamily;
}

/** A socketpair(2) of unix sockets: two records per pair. */
export interface PairSpec {
  kind: "pair";
  type: UnixType;
}

/**
 * A packet socket (AF_PACKET; needs CAP_NET_RAW): SOCK_RAW or SOCK_DGRAM for `ethertype` (host
 * order; 3 = ETH_P_ALL), bound to `interface` when given. Its record's `src` is the interface
 * ("*" when unbound).
 */
export interface PacketSpec {
  kind: "packet";
  type: "raw" | "dgram";
  ethertype: number;
  interface?: string;
}

/**
 * A netlink socket of `protocol` (NETLINK_ROUTE 0, ...), bound (port id picked by the kernel) with
 * the multicast `groups` mask, connected to `connect` when given. Its record's `sport` is its port
 * id (signed), `dst`/`dport` the group and port id it is connected to ("0"/0 when not).
 */
export interface NetlinkSpec {
  kind: "netlink";
  protocol: number;
  groups?: number;
  connect?: { portid: number; group?: number };
}

/** Every socket spec the holder understands. */
export type SocketSpec =
  | DatagramSpec
  | RawSpec
  | ListenerSpec
  | UnixSpec
  | ConnectionSpec
  | PairSpec
  | PacketSpec
  | NetlinkSpec;

/** A unix socket type: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET. */
export type UnixType = "stream" | "dgram" | "seqpacket";
/** The protocols a holder opens, by their sockdiag names. */
export type HeldProtocol = "tcp" | "udp" | "udplite" | "raw" | "mptcp" | "unix" | "packet" | "netlink";

/**
 * HeldSocket is what the holder knows about one socket it holds. `src`/`sport` are what getsockname(2)
 * reports (v4-mapped IPv6 as ::ffff:a.b.c.d); `dst`/`dport` are the address connected to, in the
 * socket's family and canonical form (src/sys has no getpeername yet), "0.0.0.0"/"::" and 0 when
 * unconnected. Unix names are in ss notation (path, "@abstract", "*" for unnamed), unix ports 0.
 * `state` is the state at creation: connecting a unix dgram socket to a bound one makes the target
 * "established" too.
 */
export interface HeldSocket {
  /** The holder's id for this socket (per holder, never reused). */
  id: number;
  family: InetFamily | "unix" | "packet" | "netlink";
  protocol: HeldProtocol;
  /** Unix, packet or netlink socket type; absent for inet sockets. */
  type?: UnixType | "raw";
  src: string;
  sport: number;
  dst: string;
  dport: number;
  /** Inode of the socket (fstat of its descriptor), as ss's `ino:` and inet_diag_msg.idiag_inode. */
  inode: number;
  /** SO_COOKIE as a decimal string. */
  cookie: string;
  /** Unix: inode of the peer socket, 0 when none. */
  peer?: number;
  /** The state sock_diag should report, by its ss filter name. */
  state: StateName;
  /** False when no sock_diag dump lists it: an unbound, unconnected UDP socket is in no hash table. */
  listed: boolean;
}

/** A request from the parent: `seq` pairs it with its reply. */
export type HolderRequest =
  | { seq: number; op: "open"; spec: SocketSpec; count: number }
  | { seq: number; op: "poll" | "send" | "close"; ids: number[] }
  | { seq: number; op: "waitFor"; ids: number[]; errno: string; deadlineMs: number }
  | { seq: number; op: "stop" };

/** A failure the child reports: the SysError fields when a system call failed. */
export interface WireError {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
}

/** A reply from the child. The first line it writes is `{ seq: 0, ok: true, result: HolderHello }`. */
export type HolderReply =
  | { seq: number; ok: true; result: unknown }
  | { seq: number; ok: false; error: WireError };

/** What the child says once it has entered its namespace. */
export interface HolderHello {
  pid: number;
  /** Inode of the network namespace the child's main thread is in. */
  netnsInode: number;
}
