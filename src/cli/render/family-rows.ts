/**
 * What ss prints of sockets without addresses and ports (misc/ss.c): their Netid, their Local and
 * Peer cells, and their -e / -m details — unix, packet, netlink, vsock, tipc and xdp.
 */
import type {
  InetSocket,
  NetlinkSocket,
  PacketSocket,
  SkMemInfo,
  Socket,
  TipcSocket,
  VsockSocket,
  XdpRing,
  XdpSocket,
} from "../../diag/socket.js";
import { VMADDR_ANY } from "../../diag/socket.js";
import type { Display } from "../select/index.js";
import { escapeText } from "./escape.js";

const NETIDS = {
  unix: { stream: "u_str", dgram: "u_dgr", seqpacket: "u_seq" },
  packet: { raw: "p_raw", dgram: "p_dgr" },
  // ss's vsock_netid_name has no name for SOCK_SEQPACKET.
  vsock: { stream: "v_str", dgram: "v_dgr", seqpacket: "???" },
  tipc: { stream: "ti_st", dgram: "ti_dg", rdm: "ti_rd", seqpacket: "ti_sq" },
} as const;
/** ETH_P_ALL (linux/if_ether.h): a packet socket receiving every protocol, shown as "*". */
const ETH_P_ALL = 3;

/** The Netid column: ss's sock_state_print names. */
export function netid(s: Socket): string {
  switch (s.family) {
    case "unix":
      return NETIDS.unix[s.type];
    case "packet":
      return NETIDS.packet[s.type];
    case "vsock":
      return NETIDS.vsock[s.type];
    case "tipc":
      return NETIDS.tipc[s.type];
    case "netlink":
      return "nl";
    default:
      return s.protocol;
  }
}

/**
 * The Local and Peer cells of a socket without addresses and ports, as ss -n prints them:
 * unix "NAME INODE" and "* PEER"; packet "PROTO:IFACE" (PROTO "*" for every one, else its number
 * in brackets; IFACE "*" for every interface) and "*"; netlink "PROTOCOL:PORTID" and
 * "GROUP:PORTID" when connected, else "*"; vsock "CID:PORT" both ("*" for any); tipc
 * "NODE:REF" and the peer's "NODE:PORT" ("-" when not connected); xdp "IFACE:qQUEUE" and "*".
 */
export function endpointCells(s: Exclude<Socket, InetSocket>): [local: string, peer: string] {
  switch (s.family) {
    case "unix":
      return [`${s.name === undefined ? "*" : escapeText(s.name)} ${s.inode}`, `* ${s.peer ?? 0}`];
    case "packet": {
      const proto = s.ethertype === ETH_P_ALL ? "*" : `[${s.ethertype}]`;
      return [`${proto}:${s.ifindex === 0 ? "*" : escapeText(s.interface ?? "")}`, "*"];
    }
    case "netlink":
      return [
        `${s.netlinkProtocol}:${s.portid === -1 ? "*" : s.portid}`,
        s.connected ? `${s.dstGroup}:${s.dstPortid}` : "*",
      ];
    case "vsock":
      return [vsockEnd(s.srcCid, s.srcPort), vsockEnd(s.dstCid, s.dstPort)];
    case "tipc":
      return [`${s.node}:${s.ref}`, s.connection ? `${s.connection.node}:${s.connection.port}` : "-"];
    case "xdp":
      return [s.ifindex === 0 ? "*" : `${s.interface}:q${s.queueId}`, "*"];
  }
}

/** ss's vsock_addr_print. */
function vsockEnd(cid: number, port: number): string {
  return `${cid === VMADDR_ANY ? "*" : cid}:${port === VMADDR_ANY ? "*" : port}`;
}

/** -m: ss's print_skmeminfo. */
export function skmemText(m: SkMemInfo): string {
  return `skmem:(r${m.rmemAlloc},rb${m.rcvbuf},t${m.wmemAlloc},tb${m.sndbuf},f${m.fwdAlloc},w${m.wmemQueued},o${m.optmem},bl${m.backlog}${m.drops === undefined ? "" : `,d${m.drops}`})`;
}

/** ss -e of a netlink socket: netlink_diag has no kernel addresses to show, so sk and cb are 0, as ss prints them. */
export function netlinkDetails(s: NetlinkSocket): string {
  return `sk=0 cb=0 groups=0x${(s.groups[0] ?? 0).toString(16).padStart(8, "0")}`;
}

const PDI_FLAGS: readonly [number, string][] = [
  [0x1, "running"],
  [0x2, " auxdata"],
  [0x4, " origdev"],
  [0x8, " vnethdr"],
  [0x10, " loss"],
];
const FANOUT_TYPES = ["hash", "lb", "cpu", "roll", "random", "qm"];

/** ss -e of a packet socket (its packet_show_sock): version, flags, rings and fanout. */
export function packetDetails(s: PacketSocket): string[] {
  const parts: string[] = [];
  if (s.info) {
    const flags = PDI_FLAGS.filter(([bit]) => (s.info!.flags & bit) !== 0).map(([, name]) => name);
    parts.push(`ver:${s.info.version} cpy_thresh:${s.info.copyThresh} flags( ${flags.join("") || "0"} )`);
  }
  for (const [name, ring] of [
    ["ring_rx", s.rxRing],
    ["ring_tx", s.txRing],
  ] as const)
    if (ring)
      parts.push(
        `${name}(blk_size:${ring.blockSize},blk_nr:${ring.blockNr},frm_size:${ring.frameSize},frm_nr:${ring.frameNr},tmo:${ring.retireTmo},features:0x${ring.features.toString(16)})`,
      );
  if (s.fanout)
    parts.push(
      `fanout(id:${s.fanout.id},type:${FANOUT_TYPES[s.fanout.type] ?? `0x${s.fanout.type.toString(16)}`})`,
    );
  return parts;
}

/**
 * The -e, -m and --tipcinfo text of a vsock, tipc or xdp socket, each part after a space, as ss
 * prints it: vsock has none (vsock_stats_print); tipc and xdp have sock_details_print's uid (when
 * not 0), ino and sk; xdp then its rings, umem and stats (xdp_show_sock, each on a line of its own
 * unless -O) and its skmem on the last line; tipc its --tipcinfo line. `owners` is the -p text,
 * placed where ss places it.
 */
export function familyDetails(s: VsockSocket | TipcSocket | XdpSocket, d: Display, owners: string): string {
  if (s.family === "vsock") return owners;
  let extended = "";
  if (d.extended) {
    if (s.uid) extended += ` uid:${s.uid}`;
    extended += ` ino:${s.inode} sk:${s.cookie.toString(16)}`;
    if (s.family === "xdp") extended += xdpDetails(s, d.oneline ? " " : "\n\t");
  }
  // ss's tipc_show_sock prints -e's details before the owners; xdp_show_sock the owners first.
  let out = s.family === "tipc" ? extended + owners : owners + extended;
  if (d.memory && s.family === "xdp" && s.skmem) out += ` ${skmemText(s.skmem)}`;
  if (d.tipcinfo && s.family === "tipc") out += tipcInfo(s, d.oneline ? " " : "\n ");
  return out;
}

/** ss --tipcinfo (tipc_show_sock), spaces and all; its stype_nameg names the type. */
function tipcInfo(s: TipcSocket, sep: string): string {
  const cong = s.linkCongested ? "link" : s.connCongested ? "conn" : "none";
  const service = s.connection?.service;
  return `${sep}type:${s.type.toUpperCase()} cong:${cong}  drop:${s.drops} ${s.published ? " publ" : ""}${service ? ` via {${service.type},${service.instance}} ` : ""}`;
}

/** xdp_show_ring, xdp_show_umem, xdp_show_stats, each after `sep`. */
function xdpDetails(s: XdpSocket, sep: string): string {
  const ring = (name: string, r: XdpRing | undefined) => (r ? `${sep}${name}(entries:${r.entries})` : "");
  let out = ring("rx", s.rxRing) + ring("tx", s.txRing);
  const u = s.umem;
  if (u) {
    // ss 6.x spells it "tumem(" on one line (-O).
    out += `${sep}${sep === " " ? "tumem" : "umem"}(id:${u.id},size:${u.size},num_pages:${u.numPages},chunk_size:${u.chunkSize},headroom:${u.headroom},ifindex:${u.ifindex},qid:${u.queueId},zc:${u.flags & 1},refs:${u.refs})`;
    out += ring("fr", s.fillRing) + ring("cr", s.completionRing);
  }
  const t = s.stats;
  if (t)
    out += `${sep}stats(rx dropped:${t.rxDropped},rx invalid:${t.rxInvalid},rx queue full:${t.rxFull},rx fill ring empty:${t.fillRingEmpty},tx invalid:${t.txInvalid},tx ring empty:${t.txRingEmpty})`;
  return out;
}
