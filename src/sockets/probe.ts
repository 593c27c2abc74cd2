/**
 * probe(): what this kernel and these privileges allow. Each answer comes from trying the thing
 * itself — a dump per protocol, destroying a socket of our own (as Cilium's probe does), entering
 * and creating a namespace — not from guessing at config files.
 */

import { release } from "node:os";
import { onePassAvailability } from "../bpf/index.js";
import { familyNumber, isInetProtocol, NETLINK_SOCK_DIAG, PROTOCOL_NAMES } from "../diag/constants.js";
import { InetSocket, type Protocol } from "../diag/socket.js";
import { NetlinkSocket } from "../netlink/index.js";
import { create, current, runIn, udpChildHashEntries } from "../netns/index.js";
import { CAP_NET_ADMIN, CAP_SYS_ADMIN, effectiveCapabilities } from "../sys/capabilities.js";
import { Errno, errnoName } from "../sys/errors.js";
import {
  AF_INET,
  bind,
  close,
  connect,
  getsockname,
  MSG_DONTWAIT,
  recvErrno,
  SOCK_DGRAM,
  socket,
  socketCookie,
} from "../sys/index.js";
import { Destroyer } from "./destroyer.js";
import { Dumper } from "./dump.js";
import { UnsupportedProtocolError } from "./errors.js";

/** One capability or feature: whether it works, and if not, why. */
export interface ProbeItem {
  ok: boolean;
  detail: string;
}

/** The answers of probe(), one item per capability or feature. */
export interface ProbeResult {
  kernel: string;
  /** sock_diag listing, per protocol. */
  diag: Record<Protocol, ProbeItem>;
  /** SOCK_DESTROY on a UDP socket of our own. */
  destroy: ProbeItem;
  capabilities: { netAdmin: ProbeItem; sysAdmin: ProbeItem };
  netns: { enter: ProbeItem; create: ProbeItem };
  /**
   * Whether namespaces created from now on get a UDP table of their own
   * (net.ipv4.udp_child_hash_entries): a dump in a namespace that shares the host's walks the UDP
   * sockets of every namespace that shares it.
   */
  udpTables: ProbeItem;
  /**
   * Whether the one pass over every task's files (bpf/) can run here: privileges, the initial PID
   * namespace, BTF, the kernel and its verifier (a probe load; nothing stays loaded).
   */
  onePass: ProbeItem;
}

/** Run every check. Never throws for a failed check: each is reported in the result. */
export function probe(): ProbeResult {
  const caps = effectiveCapabilities();
  const capItem = (bit: number, name: string, needed: string): ProbeItem =>
    caps === undefined
      ? { ok: false, detail: "cannot read /proc/self/status" }
      : (caps >> BigInt(bit)) & 1n
        ? { ok: true, detail: `${name} held` }
        : { ok: false, detail: `${name} missing: ${needed}` };
  return {
    kernel: release(),
    diag: probeDiag(),
    destroy: probeDestroy(),
    capabilities: {
      netAdmin: capItem(CAP_NET_ADMIN, "CAP_NET_ADMIN", "needed to destroy sockets"),
      sysAdmin: capItem(CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "needed to enter or create network namespaces"),
    },
    netns: probeNetns(),
    udpTables: probeUdpTables(),
    onePass: probeOnePass(),
  };
}

function probeOnePass(): ProbeItem {
  const a = onePassAvailability();
  return a.available
    ? { ok: true, detail: "the one pass can run: a BPF iterator over every task's files" }
    : { ok: false, detail: `the one pass cannot run (${a.reason}): ${a.message}` };
}

function probeUdpTables(): ProbeItem {
  const entries = udpChildHashEntries();
  if (entries === undefined)
    return {
      ok: false,
      detail: "no net.ipv4.udp_child_hash_entries (Linux 6.2+): every namespace shares one UDP table",
    };
  if (entries > 0)
    return { ok: true, detail: `namespaces created now get a UDP table of their own (${entries} buckets)` };
  return {
    ok: false,
    detail:
      "net.ipv4.udp_child_hash_entries is 0: new namespaces share the host's UDP table, so every UDP dump walks all their sockets; set it (e.g. 1024) before pods start",
  };
}

function probeDiag(): Record<Protocol, ProbeItem> {
  const out = {} as Record<Protocol, ProbeItem>;
  let conn: NetlinkSocket;
  try {
    conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
  } catch (err) {
    for (const protocol of PROTOCOL_NAMES)
      out[protocol] = { ok: false, detail: `no sock_diag socket: ${(err as Error).message}` };
    return out;
  }
  using _ = conn;
  const dumper = new Dumper(conn);
  for (const protocol of PROTOCOL_NAMES) {
    try {
      tryDump(dumper, protocol);
      out[protocol] = { ok: true, detail: `listing ${protocol} sockets works` };
    } catch (err) {
      const fallback = protocol === "raw" ? ": listed from /proc/net/raw{,6} instead, never destroyed" : "";
      out[protocol] = {
        ok: false,
        detail:
          err instanceof UnsupportedProtocolError
            ? `${err.message}${fallback}`
            : `listing failed: ${(err as Error).message}`,
      };
    }
  }
  return out;
}

/**
 * Whether this kernel has a sock_diag handler for `protocol` (its module built in or loaded): the
 * handlers are the kernel's, the same in every namespace. Throws what the attempt met otherwise.
 */
export function hasDiagHandler(protocol: Protocol): boolean {
  using conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
  try {
    tryDump(new Dumper(conn), protocol);
    return true;
  } catch (err) {
    if (err instanceof UnsupportedProtocolError) return false;
    throw err;
  }
}

/** One dump of no state: an empty state set still makes the kernel look up the protocol's handler. */
function tryDump(dumper: Dumper, protocol: Protocol): void {
  using stream =
    protocol === "unix"
      ? dumper.unix(0, 0, undefined)
      : isInetProtocol(protocol)
        ? dumper.inet({ protocol, family: familyNumber("inet"), ext: 0, states: 0 }, { attributes: false })
        : dumper.family(protocol, 0, undefined);
  while (stream.pump(() => {}));
}

/** Destroy a UDP socket connected to 127.0.0.1 that we own, and check its owner saw ECONNABORTED. */
function probeDestroy(): ProbeItem {
  const fd = socket(AF_INET, SOCK_DGRAM, 0);
  try {
    const addr = Buffer.alloc(16);
    addr.writeUInt16LE(AF_INET, 0);
    addr.writeUInt32BE(0x7f000001, 4);
    bind(fd, addr);
    // Connect to our own address: a loopback destination that exists only for this probe.
    getsockname(fd, addr);
    connect(fd, addr);
    const s = ownSocket(fd, addr);
    using conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
    const destroyer = new Destroyer(() => conn, conn.receiveQueueBytes, { batchSize: 1 });
    destroyer.add(s);
    destroyer.flush(conn);
    const failure = destroyer.report.failed[0];
    if (failure) return { ok: false, detail: `${failure.code}: ${failure.message}` };
    if (destroyer.report.gone > 0) return { ok: false, detail: "the probe socket was not found (ENOENT)" };
    const errno = -recvErrno(fd, Buffer.alloc(1), MSG_DONTWAIT);
    return errno === Errno.ECONNABORTED
      ? { ok: true, detail: "SOCK_DESTROY works: the owner sees ECONNABORTED" }
      : { ok: false, detail: `destroy was acked but the owner saw ${errnoName(errno)}, not ECONNABORTED` };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  } finally {
    close(fd);
  }
}

/** The InetSocket describing our own socket connected to itself: its id as the kernel knows it. */
function ownSocket(fd: number, addr: Buffer): InetSocket {
  const port = addr.readUInt16BE(2);
  return InetSocket.build({
    family: "inet",
    protocol: "udp",
    sport: port,
    dport: port,
    src: "127.0.0.1",
    dst: "127.0.0.1",
    cookie: socketCookie(fd),
  });
}

function probeNetns(): { enter: ProbeItem; create: ProbeItem } {
  let enter: ProbeItem;
  try {
    using self = current();
    runIn(self, () => undefined);
    enter = { ok: true, detail: "setns into a network namespace works" };
  } catch (err) {
    enter = { ok: false, detail: (err as Error).message };
  }
  let made: ProbeItem;
  try {
    create().close();
    made = { ok: true, detail: "creating a network namespace works" };
  } catch (err) {
    made = { ok: false, detail: (err as Error).message };
  }
  return { enter, create: made };
}
