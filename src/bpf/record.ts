/**
 * The records the socket-finding program writes — a held one (16 bytes) for each UDP socket with a
 * local port a descriptor holds, a found one (80 bytes, the same header first) for each socket
 * connected to a backend — and their decoding. Addresses are 16 bytes in network order, an IPv4 one in its v4-mapped form
 * (::ffff:a.b.c.d), so that the destination and its port, consecutive, are the backend map's key.
 */
import { formatIPv4, formatIPv6, isV4Mapped } from "../diag/address.js";
import { InetSocket, type SocketNetns } from "../diag/socket.js";
import { stateName } from "../diag/states.js";
import { AF_INET, IPPROTO_TCP } from "../sys/index.js";

export const Record = {
  // The header, a held record whole:
  kind: 0, // u16: RecordKind
  family: 2, // u16
  netns: 4, // u32: the socket's namespace (sk_net's ns.inum)
  inode: 8, // u64
  heldSize: 16,
  // A found record's rest:
  cookie: 16, // u64
  protocol: 24, // u16
  type: 26, // u16
  state: 28, // u8, then 3 bytes of 0
  src: 32, // 16 bytes
  dst: 48, // 16 bytes
  dport: 64, // u16, network order
  sport: 66, // u16, host order (skc_num)
  boundIfindex: 68, // s32
  tgid: 72, // u32
  fd: 76, // u32
  size: 80,
} as const;

/** A record's kind: a UDP socket with a local port held by a task, or a socket found. */
export const RecordKind = { held: 1, found: 2 } as const;

/** The backend map's key: the destination address and port, as in the record. */
export const KEY_OFFSET = Record.dst;
export const KEY_SIZE = 18;

/** A socket the pass found: the socket's own fields and one process holding it. */
export interface FoundSocket {
  /** The socket's network namespace: its inode number, as /proc/PID/ns/net shows it. */
  readonly netns: number;
  readonly cookie: bigint;
  /** AF_INET or AF_INET6. */
  readonly family: number;
  /** IPPROTO_UDP or IPPROTO_TCP. */
  readonly protocol: number;
  /** SOCK_DGRAM, SOCK_STREAM, ... */
  readonly type: number;
  /** The kernel's state number (TCP_ESTABLISHED = 1, as sock_diag reports). */
  readonly state: number;
  readonly src: string;
  readonly sport: number;
  readonly dst: string;
  readonly dport: number;
  /** The interface the socket is bound to (SO_BINDTODEVICE), 0 when none. */
  readonly boundIfindex: number;
  /** The socket's inode number (as /proc/PID/fd/N links show it). */
  readonly inode: number;
  /** One process holding the socket, and its descriptor there. */
  readonly pid: number;
  readonly fd: number;
}

/** The 16 address bytes at `at` as text: dotted IPv4 for an AF_INET socket, else IPv6 text. */
function addressAt(view: DataView, at: number, family: number): string {
  const [w0, w1, w2, w3] = [0, 4, 8, 12].map((i) => view.getUint32(at + i, false)) as [
    number,
    number,
    number,
    number,
  ];
  if (family === AF_INET && isV4Mapped(w0, w1, w2)) return formatIPv4(w3);
  return formatIPv6(w0, w1, w2, w3);
}

/** The record at `at` of `view`. */
export function decodeRecord(view: DataView, at: number): FoundSocket {
  const family = view.getUint16(at + Record.family, true);
  return {
    netns: view.getUint32(at + Record.netns, true),
    cookie: view.getBigUint64(at + Record.cookie, true),
    family,
    protocol: view.getUint16(at + Record.protocol, true),
    type: view.getUint16(at + Record.type, true),
    state: view.getUint8(at + Record.state),
    src: addressAt(view, at + Record.src, family),
    sport: view.getUint16(at + Record.sport, true),
    dst: addressAt(view, at + Record.dst, family),
    dport: view.getUint16(at + Record.dport, false),
    boundIfindex: view.getInt32(at + Record.boundIfindex, true),
    inode: Number(view.getBigUint64(at + Record.inode, true)),
    pid: view.getUint32(at + Record.tgid, true),
    fd: view.getUint32(at + Record.fd, true),
  };
}

/**
 * `found` as a listed socket of namespace `netns` (undefined: the caller's own): what a destroy
 * names it by — family, protocol, tuple, bound interface (udp_diag's lookup matches a socket bound
 * to a device only with it) and cookie — and its state and inode.
 */
export function inetSocketOf(found: FoundSocket, netns: SocketNetns | undefined): InetSocket {
  return InetSocket.build({
    family: found.family === AF_INET ? "inet" : "inet6",
    protocol: found.protocol === IPPROTO_TCP ? "tcp" : "udp",
    state: stateName(found.state),
    src: found.src,
    sport: found.sport,
    dst: found.dst,
    dport: found.dport,
    ifindex: found.boundIfindex,
    cookie: found.cookie,
    inode: found.inode,
    netns,
  });
}
