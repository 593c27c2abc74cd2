/**
 * Opening sockets in the holder child, from a SocketSpec, with the raw system calls of src/sys/
 * (not node's net/dgram), so one process can hold ~19,000 descriptors and learn each one's inode and
 * cookie. A batch is all or nothing: on the first failure every socket it opened is closed again.
 */
import { fstatSync } from "node:fs";
import type { StateName } from "../../src/diag/states.js";
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_PACKET,
  AF_UNIX,
  accept,
  bind,
  connect,
  Errno,
  getsockname,
  ifNameToIndex,
  listen,
  SOCK_DGRAM,
  SOCK_NONBLOCK,
  SOCK_RAW,
  SOCK_SEQPACKET,
  SOCK_STREAM,
  SOL_SOCKET,
  SysError,
  setsockoptInt,
  socket,
  socketCookie,
  socketpair,
} from "../../src/sys/index.js";
import { IPPROTO_MPTCP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDPLITE } from "../../src/sys/socket.js";
import type {
  BindSpec,
  ConnectionSpec,
  DatagramSpec,
  HeldSocket,
  ListenerSpec,
  NetlinkSpec,
  PacketSpec,
  PairSpec,
  RawSpec,
  SocketSpec,
  UnixSpec,
  UnixType,
} from "./holder-protocol.js";
import type { HeldEntry, SocketTable } from "./holder-table.js";
import {
  canonicalAddress,
  decodeSockaddr,
  familyOf,
  type InetFamily,
  SOCKADDR_UN_SIZE,
  sockaddrInet,
  sockaddrUn,
  unixDisplayName,
  v4Mapped,
} from "./sockaddr.js";

/** SO_REUSEPORT from asm-generic/socket.h (src/sys does not need it). */
const SO_REUSEPORT = 15;
const UNIX_TYPES: Record<UnixType, number> = {
  stream: SOCK_STREAM,
  dgram: SOCK_DGRAM,
  seqpacket: SOCK_SEQPACKET,
};
const WILDCARD: Record<InetFamily, string> = { inet: "0.0.0.0", inet6: "::" };
const LOOPBACK: Record<InetFamily, string> = { inet: "127.0.0.1", inet6: "::1" };
/** How long an accept waits for a loopback connection that connect(2) already reported complete. */
const ACCEPT_TIMEOUT_MS = 5000;

/** A descriptor opened by the current batch; its record is filled in once the socket is complete. */
type Pending = Omit<HeldEntry, "record"> & { record?: HeldSocket };

/** Opener turns specs into held sockets in one SocketTable. */
export class Opener {
  private readonly nameBuf = Buffer.alloc(SOCKADDR_UN_SIZE);
  private batch: Pending[] = [];

  constructor(private readonly table: SocketTable) {}

  /** open creates `count` sockets (pairs and connections give two records each) as `spec` says. */
  open(spec: SocketSpec, count: number): HeldSocket[] {
    if (!Number.isInteger(count) || count < 1) throw new Error(`open: bad count ${count}`);
    this.batch = [];
    let i = 0;
    try {
      for (; i < count; i++) this.openOne(spec, i, count);
    } catch (err) {
      for (const e of this.batch) this.table.release(e);
      if (err instanceof Error) err.message = `open ${spec.kind} #${i} of ${count}: ${err.message}`;
      throw err;
    }
    const entries = this.batch as HeldEntry[];
    for (const e of entries) this.table.add(e);
    return entries.map((e) => e.record);
  }

  private openOne(spec: SocketSpec, i: number, count: number): void {
    switch (spec.kind) {
      case "udp":
        this.datagram(spec, i);
        break;
      case "raw":
        this.raw(spec);
        break;
      case "listener":
        this.listener(spec, i);
        break;
      case "unix":
        this.unix(spec, count > 1 && spec.name !== undefined ? `${spec.name}${i}` : spec.name);
        break;
      case "connection":
        this.connection(spec);
        break;
      case "pair":
        this.pair(spec);
        break;
      case "packet":
        this.packet(spec);
        break;
      case "netlink":
        this.netlink(spec);
        break;
      default:
        throw new Error(`unknown spec kind ${JSON.stringify((spec as { kind: unknown }).kind)}`);
    }
  }

  private datagram(spec: DatagramSpec, i: number): void {
    const family = spec.family ?? familyOf(spec.bind?.address ?? spec.connect?.address ?? "0.0.0.0");
    const protocol = spec.protocol ?? "udp";
    const fd = this.track(
      socket(
        domainOf(family),
        SOCK_DGRAM | SOCK_NONBLOCK,
        protocol === "udp" ? IPPROTO_UDP : IPPROTO_UDPLITE,
      ),
    );
    if (spec.reusePort) setsockoptInt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
    if (spec.bind) bindInet(fd, family, spec.bind, i);
    let dst = WILDCARD[family];
    if (spec.connect) {
      dst = addressFor(family, spec.connect.address);
      connectInet(fd, family, dst, spec.connect.port);
    }
    const connected = spec.connect !== undefined;
    const listed = connected || spec.bind !== undefined;
    const known = { family, protocol, dst, dport: spec.connect?.port ?? 0, listed };
    this.finish(fd, known, connected ? "established" : "close");
  }

  private raw(spec: RawSpec): void {
    const family = spec.family ?? familyOf(spec.bind?.address ?? spec.connect?.address ?? "0.0.0.0");
    const fd = this.track(socket(domainOf(family), SOCK_RAW | SOCK_NONBLOCK, spec.ipProtocol));
    if (spec.bind) bindInet(fd, family, { address: spec.bind.address }, 0);
    let dst = WILDCARD[family];
    if (spec.connect) {
      dst = addressFor(family, spec.connect.address);
      connectInet(fd, family, dst, 0);
    }
    this.finish(fd, { family, protocol: "raw", dst, dport: 0 }, spec.connect ? "established" : "close");
  }

  private listener(spec: ListenerSpec, i: number): void {
    const family = spec.family ?? familyOf(spec.bind?.address ?? "0.0.0.0");
    const protocol = spec.protocol ?? "tcp";
    const fd = this.track(
      socket(domainOf(family), SOCK_STREAM | SOCK_NONBLOCK, protocol === "tcp" ? IPPROTO_TCP : IPPROTO_MPTCP),
    );
    if (spec.bind) bindInet(fd, family, spec.bind, i);
    listen(fd, spec.backlog ?? 4096);
    this.finish(fd, { family, protocol, dst: WILDCARD[family], dport: 0 }, "listening");
  }

  private unix(spec: UnixSpec, name: string | undefined): void {
    const fd = this.track(socket(AF_UNIX, UNIX_TYPES[spec.type] | SOCK_NONBLOCK, 0));
    if (name !== undefined) {
      named(unixDisplayName(name), () => bind(fd, sockaddrUn(name)));
      (this.batch.at(-1) as Pending).unixName = name;
    }
    if (spec.listen) listen(fd, 4096);
    this.finish(
      fd,
      { family: "unix", protocol: "unix", type: spec.type, dst: "*", dport: 0, peer: 0 },
      spec.listen ? "listening" : "close",
    );
  }

  private connection(spec: ConnectionSpec): void {
    const target = this.table.get(spec.listener);
    const t = target.record;
    if (t.family === "unix") {
      this.unixConnection(target);
      return;
    }
    if (t.family === "packet" || t.family === "netlink") throw new Error(`socket ${t.id} is not a listener`);
    if (t.state !== "listening") throw new Error(`socket ${t.id} is not a listener`);
    const family = spec.family ?? t.family;
    const dst = reachAddress(t.family, t.src, family);
    const protocol = t.protocol === "mptcp" ? IPPROTO_MPTCP : IPPROTO_TCP;
    const client = this.track(socket(domainOf(family), SOCK_STREAM, protocol));
    connectInet(client, family, dst, t.sport);
    const c = this.finish(client, { family, protocol: t.protocol, dst, dport: t.sport }, "established");
    const server = this.track(acceptSoon(target.fd));
    const cdst = c.record.family === t.family ? c.record.src : addressFor(t.family, unmapped(c.record.src));
    this.finish(
      server,
      { family: t.family, protocol: t.protocol, dst: cdst, dport: c.record.sport },
      "established",
    );
  }

  private unixConnection(target: HeldEntry): void {
    const t = target.record;
    const type = t.type === undefined || t.type === "raw" ? "stream" : t.type;
    const name = target.unixName;
    if (name === undefined) throw new Error(`socket ${t.id} has no name to connect to`);
    if (type !== "dgram" && t.state !== "listening") throw new Error(`socket ${t.id} is not a listener`);
    const client = this.track(socket(AF_UNIX, UNIX_TYPES[type], 0));
    const dst = unixDisplayName(name);
    named(dst, () => connect(client, sockaddrUn(name)));
    const base = { family: "unix", protocol: "unix", type, dport: 0 } as const;
    if (type === "dgram") {
      this.finish(client, { ...base, dst, peer: t.inode }, "established");
      return;
    }
    const c = this.finish(client, { ...base, dst, peer: 0 }, "established");
    const s = this.finish(
      this.track(acceptSoon(target.fd)),
      { ...base, dst: "*", peer: c.record.inode },
      "established",
    );
    c.record.peer = s.record.inode;
  }

  private pair(spec: PairSpec): void {
    const [a, b] = socketpair(AF_UNIX, UNIX_TYPES[spec.type]);
    this.track(a);
    this.track(b);
    const base = { family: "unix", protocol: "unix", type: spec.type, dst: "*", dport: 0, peer: 0 } as const;
    const ea = this.finish(a, base, "established");
    const eb = this.finish(b, { ...base, peer: ea.record.inode }, "established");
    ea.record.peer = eb.record.inode;
  }

  private packet(spec: PacketSpec): void {
    const protocol = htons(spec.ethertype);
    const fd = this.track(socket(AF_PACKET, spec.type === "raw" ? SOCK_RAW : SOCK_DGRAM, protocol));
    if (spec.interface !== undefined) {
      // struct sockaddr_ll { u16 family; be16 protocol; int ifindex; u16 hatype; u8 pkttype, halen; u8 addr[8]; }
      const ifindex = ifNameToIndex(spec.interface);
      if (ifindex === 0) throw new Error(`no interface ${spec.interface}`);
      const sll = Buffer.alloc(20);
      sll.writeUInt16LE(AF_PACKET, 0);
      sll.writeUInt16BE(spec.ethertype, 2);
      sll.writeInt32LE(ifindex, 4);
      named(spec.interface, () => bind(fd, sll));
    }
    this.complete(fd, {
      family: "packet",
      protocol: "packet",
      type: spec.type,
      src: spec.interface ?? "*",
      sport: 0,
      dst: "*",
      dport: 0,
    });
  }

  private netlink(spec: NetlinkSpec): void {
    const fd = this.track(socket(AF_NETLINK, SOCK_RAW, spec.protocol));
    bind(fd, sockaddrNl(0, spec.groups ?? 0));
    if (spec.connect) connect(fd, sockaddrNl(spec.connect.portid, spec.connect.group ?? 0));
    const nl = Buffer.alloc(12);
    getsockname(fd, nl);
    this.complete(fd, {
      family: "netlink",
      protocol: "netlink",
      type: "raw",
      src: String(spec.protocol),
      sport: nl.readInt32LE(4),
      dst: String(spec.connect?.group ?? 0),
      dport: spec.connect?.portid ?? 0,
    });
  }

  /** complete records a socket whose address getsockname cannot describe in the inet/unix way. */
  private complete(
    fd: number,
    known: Omit<HeldSocket, "id" | "inode" | "cookie" | "state" | "listed">,
  ): void {
    const record: HeldSocket = {
      id: this.table.newId(),
      inode: fstatSync(fd).ino,
      cookie: socketCookie(fd).toString(),
      state: "close",
      listed: true,
      ...known,
    };
    (this.batch.at(-1) as Pending).record = record;
  }

  /** track remembers a new descriptor at once, so a failure later in the batch closes it. */
  private track(fd: number): number {
    this.batch.push({ fd });
    return fd;
  }

  /** finish reads the kernel's view of `fd` (local address, inode, cookie) and completes its record. */
  private finish(
    fd: number,
    known: Pick<HeldSocket, "family" | "protocol" | "dst" | "dport"> & Partial<HeldSocket>,
    state: StateName,
  ): HeldEntry {
    const local = decodeSockaddr(this.nameBuf, getsockname(fd, this.nameBuf));
    const record: HeldSocket = {
      id: this.table.newId(),
      src: local.family === "unix" ? local.name : local.address,
      sport: local.family === "unix" ? 0 : local.port,
      inode: fstatSync(fd).ino,
      cookie: socketCookie(fd).toString(),
      state,
      listed: true,
      ...known,
    };
    // The descriptor was tracked moments ago: search from the end, so a batch stays linear.
    for (let k = this.batch.length - 1; k >= 0; k--) {
      const entry = this.batch[k] as Pending;
      if (entry.fd !== fd) continue;
      entry.record = record;
      return entry as HeldEntry;
    }
    throw new Error(`internal: descriptor ${fd} was not tracked`);
  }
}

/** struct sockaddr_nl { u16 nl_family; u16 pad; u32 nl_pid; u32 nl_groups; } */
function sockaddrNl(portid: number, groups: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt16LE(AF_NETLINK, 0);
  b.writeInt32LE(portid | 0, 4);
  b.writeUInt32LE(groups >>> 0, 8);
  return b;
}

function htons(n: number): number {
  return ((n & 0xff) << 8) | ((n >> 8) & 0xff);
}

function domainOf(family: InetFamily): number {
  return family === "inet" ? AF_INET : AF_INET6;
}

/** bindInet binds to `spec`; a port range gives socket `i` of a batch the port `from + i`. */
function bindInet(fd: number, family: InetFamily, spec: BindSpec, i: number): void {
  const range = spec.port;
  let port = 0;
  if (typeof range === "number") port = range;
  else if (range) {
    port = range.from + i;
    if (port > range.to) throw new Error(`port range ${range.from}-${range.to} has no port for socket #${i}`);
  }
  const address = addressFor(family, spec.address ?? WILDCARD[family]);
  named(endpointText(address, port), () => bind(fd, sockaddrInet(family, address, port)));
}

function connectInet(fd: number, family: InetFamily, address: string, port: number): void {
  named(endpointText(address, port), () => connect(fd, sockaddrInet(family, address, port)));
}

function endpointText(address: string, port: number): string {
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

/** named runs a system call and, if it fails, rethrows its SysError naming the address it was given. */
function named(detail: string, call: () => void): void {
  try {
    call();
  } catch (err) {
    if (err instanceof SysError) throw new SysError(err.syscall, err.errno, detail);
    throw err;
  }
}

/** addressFor renders `address` for a socket of `family`: IPv4 on "inet6" becomes v4-mapped. */
function addressFor(family: InetFamily, address: string): string {
  const own = familyOf(address);
  if (own === family) return canonicalAddress(address);
  if (family === "inet6") return v4Mapped(address);
  throw new Error(`an IPv4 socket cannot use IPv6 address ${address}`);
}

/** unmapped turns ::ffff:a.b.c.d back into a.b.c.d. */
function unmapped(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** reachAddress is where a `client` family socket connects to reach a listener bound to `src`. */
function reachAddress(listener: InetFamily, src: string, client: InetFamily): string {
  const bound =
    src === WILDCARD[listener]
      ? LOOPBACK[listener === "inet6" && client === "inet" ? "inet" : listener]
      : src;
  return addressFor(client, client === "inet" ? unmapped(bound) : bound);
}

/**
 * acceptSoon accepts from a non-blocking listener a connection that connect(2) already completed:
 * on loopback the handshake's last step may still sit in a softirq, so EAGAIN is retried briefly.
 */
function acceptSoon(listener: number): number {
  const deadline = Date.now() + ACCEPT_TIMEOUT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      return accept(listener);
    } catch (err) {
      if (!(err instanceof SysError) || err.errno !== Errno.EAGAIN || Date.now() > deadline) throw err;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}
