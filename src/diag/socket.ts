/**
 * The Socket model: what one sock_diag answer says about one socket, as plain data — the types
 * every socket shares here, a class per family in its *-socket.ts. Decoders in this folder fill
 * them straight from the receive buffer.
 */
import type { FamilyProtocol } from "./family-request.js";
import { InetSocket } from "./inet-socket.js";
import { NetlinkSocket } from "./netlink-socket.js";
import { PacketSocket } from "./packet-socket.js";
import type { StateName } from "./states.js";
import { TipcSocket } from "./tipc-socket.js";
import { UnixSocket } from "./unix-socket.js";
import { VsockSocket } from "./vsock-socket.js";
import { XdpSocket } from "./xdp-socket.js";

export type { FamilyProtocol } from "./family-request.js";
export {
  type IdFault,
  INET_DIAG_MSG_LEN,
  InetSocket,
  type InetSocketInit,
  idFault,
  writeInetDiagMsg,
} from "./inet-socket.js";
export { NetlinkSocket } from "./netlink-socket.js";
export { type PacketInfo, type PacketRing, PacketSocket, type PacketType } from "./packet-socket.js";
export { type TipcConnection, type TipcGroup, TipcSocket, type TipcType } from "./tipc-socket.js";
export { UnixSocket, type UnixType } from "./unix-socket.js";
export { VMADDR_ANY, type VsockEnds, VsockSocket, type VsockType } from "./vsock-socket.js";
export { type XdpRing, XdpSocket, type XdpStats, type XdpUmem } from "./xdp-socket.js";

/** The classes of listed sockets other than InetSocket: one per family with a sock_diag handler of its own. */
export const FIELD_SOCKET_CLASSES = [
  UnixSocket,
  PacketSocket,
  NetlinkSocket,
  VsockSocket,
  TipcSocket,
  XdpSocket,
] as const;

/** Whether `v` is a socket as a listing made it (of its class, not a plain copy of its fields). */
export function isListedSocket(v: unknown): v is Socket {
  return v instanceof InetSocket || FIELD_SOCKET_CLASSES.some((c) => v instanceof c);
}

/** An inet protocol sockdiag can ask the kernel about. */
export type InetProtocol = "tcp" | "udp" | "udplite" | "raw" | "mptcp" | "sctp";
/**
 * Any protocol sockdiag can ask about: the inet protocols, and the families with a sock_diag
 * handler of their own (unix, packet, netlink; vsock, tipc and xdp where the kernel has one).
 */
export type Protocol = InetProtocol | "unix" | FamilyProtocol;
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
export interface SocketBase {
  /** The network namespace this socket was listed in (undefined: the caller's own). */
  netns?: SocketNetns | undefined;
  readonly inode: number;
  readonly cookie: bigint;
  readonly state: StateName;
}

/**
 * Any socket sockdiag lists. Narrow on `family` ("inet", "inet6", "unix", "packet", "netlink",
 * "vsock", "tipc", "xdp").
 */
export type Socket =
  | InetSocket
  | UnixSocket
  | PacketSocket
  | NetlinkSocket
  | VsockSocket
  | TipcSocket
  | XdpSocket;

/** Whether `s` is an inet socket (family "inet" or "inet6"): the only kind with addresses and ports. */
export function isInetSocket(s: Socket): s is InetSocket {
  return s.family === "inet" || s.family === "inet6";
}
