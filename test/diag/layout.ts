/**
 * An independent test builder for netlink and sock_diag structs: every layout below is transcribed
 * field by field from /usr/include/linux/{netlink,inet_diag,unix_diag,tcp}.h, with the offsets that
 * gcc's offsetof() gives on x86-64, and owes nothing to the production writers and decoders in src/.
 * Tests build expected bytes with `pack` and check bytes the production code wrote with `unpack`.
 */
import { endianness } from "node:os";

/** How a field is stored: host order (little-endian on every machine we run on) or network order. */
export type FieldKind = "u8" | "u16" | "u32" | "u64" | "be16" | "be32";

/** One field of a C struct: its C name (arrays as name[i]), byte offset and storage. */
export interface Field {
  readonly name: string;
  readonly offset: number;
  readonly kind: FieldKind;
}

/** A C struct: its name, sizeof and fields. */
export interface Layout {
  readonly name: string;
  readonly size: number;
  readonly fields: readonly Field[];
}

/** Field values by C name; absent fields are zero. */
export type Values = Record<string, number | bigint>;

if (endianness() !== "LE") throw new Error("layout.ts assumes a little-endian host (host-order fields)");

const f = (name: string, offset: number, kind: FieldKind): Field => ({ name, offset, kind });

/** `name[0..n)` as n fields of `size` bytes each, starting at `offset`. */
function array(name: string, offset: number, kind: FieldKind, n: number, size: number): Field[] {
  return Array.from({ length: n }, (_, i) => f(`${name}[${i}]`, offset + i * size, kind));
}

/** The fields of `inner`, renamed `prefix.field` and moved by `offset` (a struct member). */
function member(prefix: string, offset: number, inner: Layout): Field[] {
  return inner.fields.map((x) => f(`${prefix}.${x.name}`, offset + x.offset, x.kind));
}

/** struct nlmsghdr { __u32 nlmsg_len; __u16 nlmsg_type; __u16 nlmsg_flags; __u32 nlmsg_seq; __u32 nlmsg_pid; } */
export const NLMSGHDR: Layout = {
  name: "nlmsghdr",
  size: 16,
  fields: [
    f("nlmsg_len", 0, "u32"),
    f("nlmsg_type", 4, "u16"),
    f("nlmsg_flags", 6, "u16"),
    f("nlmsg_seq", 8, "u32"),
    f("nlmsg_pid", 12, "u32"),
  ],
};

/** struct nlattr { __u16 nla_len; __u16 nla_type; } */
export const NLATTR: Layout = {
  name: "nlattr",
  size: 4,
  fields: [f("nla_len", 0, "u16"), f("nla_type", 2, "u16")],
};

/** struct nlmsgerr { int error; struct nlmsghdr msg; } (the echoed header; payload cut by NETLINK_CAP_ACK). */
export const NLMSGERR: Layout = {
  name: "nlmsgerr",
  size: 20,
  fields: [f("error", 0, "u32"), ...member("msg", 4, NLMSGHDR)],
};

/**
 * struct inet_diag_sockid { __be16 idiag_sport; __be16 idiag_dport; __be32 idiag_src[4];
 *   __be32 idiag_dst[4]; __u32 idiag_if; __u32 idiag_cookie[2]; }
 */
export const INET_DIAG_SOCKID: Layout = {
  name: "inet_diag_sockid",
  size: 48,
  fields: [
    f("idiag_sport", 0, "be16"),
    f("idiag_dport", 2, "be16"),
    ...array("idiag_src", 4, "be32", 4, 4),
    ...array("idiag_dst", 20, "be32", 4, 4),
    f("idiag_if", 36, "u32"),
    ...array("idiag_cookie", 40, "u32", 2, 4),
  ],
};

/**
 * struct inet_diag_req_v2 { __u8 sdiag_family; __u8 sdiag_protocol; __u8 idiag_ext; __u8 pad;
 *   __u32 idiag_states; struct inet_diag_sockid id; }
 */
export const INET_DIAG_REQ_V2: Layout = {
  name: "inet_diag_req_v2",
  size: 56,
  fields: [
    f("sdiag_family", 0, "u8"),
    f("sdiag_protocol", 1, "u8"),
    f("idiag_ext", 2, "u8"),
    f("pad", 3, "u8"),
    f("idiag_states", 4, "u32"),
    ...member("id", 8, INET_DIAG_SOCKID),
  ],
};

/**
 * struct inet_diag_msg { __u8 idiag_family; __u8 idiag_state; __u8 idiag_timer; __u8 idiag_retrans;
 *   struct inet_diag_sockid id; __u32 idiag_expires; __u32 idiag_rqueue; __u32 idiag_wqueue;
 *   __u32 idiag_uid; __u32 idiag_inode; }
 */
export const INET_DIAG_MSG: Layout = {
  name: "inet_diag_msg",
  size: 72,
  fields: [
    f("idiag_family", 0, "u8"),
    f("idiag_state", 1, "u8"),
    f("idiag_timer", 2, "u8"),
    f("idiag_retrans", 3, "u8"),
    ...member("id", 4, INET_DIAG_SOCKID),
    f("idiag_expires", 52, "u32"),
    f("idiag_rqueue", 56, "u32"),
    f("idiag_wqueue", 60, "u32"),
    f("idiag_uid", 64, "u32"),
    f("idiag_inode", 68, "u32"),
  ],
};

/** struct inet_diag_meminfo { __u32 idiag_rmem; __u32 idiag_wmem; __u32 idiag_fmem; __u32 idiag_tmem; } */
export const INET_DIAG_MEMINFO: Layout = {
  name: "inet_diag_meminfo",
  size: 16,
  fields: [
    f("idiag_rmem", 0, "u32"),
    f("idiag_wmem", 4, "u32"),
    f("idiag_fmem", 8, "u32"),
    f("idiag_tmem", 12, "u32"),
  ],
};

/** The SK_MEMINFO_* u32 array (linux/sock_diag.h), RMEM_ALLOC .. DROPS. */
export const SK_MEMINFO: Layout = {
  name: "sk_meminfo",
  size: 36,
  fields: [
    "SK_MEMINFO_RMEM_ALLOC",
    "SK_MEMINFO_RCVBUF",
    "SK_MEMINFO_WMEM_ALLOC",
    "SK_MEMINFO_SNDBUF",
    "SK_MEMINFO_FWD_ALLOC",
    "SK_MEMINFO_WMEM_QUEUED",
    "SK_MEMINFO_OPTMEM",
    "SK_MEMINFO_BACKLOG",
    "SK_MEMINFO_DROPS",
  ].map((name, i) => f(name, i * 4, "u32")),
};

/**
 * struct unix_diag_req { __u8 sdiag_family; __u8 sdiag_protocol; __u16 pad; __u32 udiag_states;
 *   __u32 udiag_ino; __u32 udiag_show; __u32 udiag_cookie[2]; }
 */
export const UNIX_DIAG_REQ: Layout = {
  name: "unix_diag_req",
  size: 24,
  fields: [
    f("sdiag_family", 0, "u8"),
    f("sdiag_protocol", 1, "u8"),
    f("pad", 2, "u16"),
    f("udiag_states", 4, "u32"),
    f("udiag_ino", 8, "u32"),
    f("udiag_show", 12, "u32"),
    ...array("udiag_cookie", 16, "u32", 2, 4),
  ],
};

/** struct unix_diag_msg { __u8 udiag_family; __u8 udiag_type; __u8 udiag_state; __u8 pad; __u32 udiag_ino; __u32 udiag_cookie[2]; } */
export const UNIX_DIAG_MSG: Layout = {
  name: "unix_diag_msg",
  size: 16,
  fields: [
    f("udiag_family", 0, "u8"),
    f("udiag_type", 1, "u8"),
    f("udiag_state", 2, "u8"),
    f("pad", 3, "u8"),
    f("udiag_ino", 4, "u32"),
    ...array("udiag_cookie", 8, "u32", 2, 4),
  ],
};

/** struct packet_diag_req / netlink_diag_req / xdp_diag_req: { __u8 family, protocol; __u16 pad; __u32 ino, show, cookie[2]; } */
export const PACKET_DIAG_REQ: Layout = {
  name: "packet_diag_req",
  size: 20,
  fields: [
    f("sdiag_family", 0, "u8"),
    f("sdiag_protocol", 1, "u8"),
    f("pad", 2, "u16"),
    f("pdiag_ino", 4, "u32"),
    f("pdiag_show", 8, "u32"),
    ...array("pdiag_cookie", 12, "u32", 2, 4),
  ],
};

/** struct packet_diag_msg { __u8 pdiag_family, pdiag_type; __u16 pdiag_num; __u32 pdiag_ino; __u32 pdiag_cookie[2]; } */
export const PACKET_DIAG_MSG: Layout = {
  name: "packet_diag_msg",
  size: 16,
  fields: [
    f("pdiag_family", 0, "u8"),
    f("pdiag_type", 1, "u8"),
    f("pdiag_num", 2, "u16"),
    f("pdiag_ino", 4, "u32"),
    ...array("pdiag_cookie", 8, "u32", 2, 4),
  ],
};

/** struct packet_diag_info { __u32 pdi_index, pdi_version, pdi_reserve, pdi_copy_thresh, pdi_tstamp, pdi_flags; } */
export const PACKET_DIAG_INFO: Layout = {
  name: "packet_diag_info",
  size: 24,
  fields: ["pdi_index", "pdi_version", "pdi_reserve", "pdi_copy_thresh", "pdi_tstamp", "pdi_flags"].map(
    (name, i) => f(name, i * 4, "u32"),
  ),
};

/** struct netlink_diag_msg { __u8 family, type, protocol, state; __u32 portid, dst_portid, dst_group, ino, cookie[2]; } */
export const NETLINK_DIAG_MSG: Layout = {
  name: "netlink_diag_msg",
  size: 28,
  fields: [
    f("ndiag_family", 0, "u8"),
    f("ndiag_type", 1, "u8"),
    f("ndiag_protocol", 2, "u8"),
    f("ndiag_state", 3, "u8"),
    f("ndiag_portid", 4, "u32"),
    f("ndiag_dst_portid", 8, "u32"),
    f("ndiag_dst_group", 12, "u32"),
    f("ndiag_ino", 16, "u32"),
    ...array("ndiag_cookie", 20, "u32", 2, 4),
  ],
};

/**
 * struct vsock_diag_req { __u8 sdiag_family, sdiag_protocol; __u16 pad; __u32 vdiag_states, vdiag_ino,
 *   vdiag_show; __u32 vdiag_cookie[2]; } (linux/vm_sockets_diag.h)
 */
export const VSOCK_DIAG_REQ: Layout = {
  name: "vsock_diag_req",
  size: 24,
  fields: [
    f("sdiag_family", 0, "u8"),
    f("sdiag_protocol", 1, "u8"),
    f("pad", 2, "u16"),
    f("vdiag_states", 4, "u32"),
    f("vdiag_ino", 8, "u32"),
    f("vdiag_show", 12, "u32"),
    ...array("vdiag_cookie", 16, "u32", 2, 4),
  ],
};

/**
 * struct vsock_diag_msg { __u8 vdiag_family, vdiag_type, vdiag_state, vdiag_shutdown; __u32 vdiag_src_cid,
 *   vdiag_src_port, vdiag_dst_cid, vdiag_dst_port, vdiag_ino; __u32 vdiag_cookie[2]; }
 */
export const VSOCK_DIAG_MSG: Layout = {
  name: "vsock_diag_msg",
  size: 32,
  fields: [
    f("vdiag_family", 0, "u8"),
    f("vdiag_type", 1, "u8"),
    f("vdiag_state", 2, "u8"),
    f("vdiag_shutdown", 3, "u8"),
    f("vdiag_src_cid", 4, "u32"),
    f("vdiag_src_port", 8, "u32"),
    f("vdiag_dst_cid", 12, "u32"),
    f("vdiag_dst_port", 16, "u32"),
    f("vdiag_ino", 20, "u32"),
    ...array("vdiag_cookie", 24, "u32", 2, 4),
  ],
};

/** struct tipc_sock_diag_req { __u8 sdiag_family, sdiag_protocol; __u16 pad; __u32 tidiag_states; } (linux/tipc_sockets_diag.h) */
export const TIPC_SOCK_DIAG_REQ: Layout = {
  name: "tipc_sock_diag_req",
  size: 8,
  fields: [
    f("sdiag_family", 0, "u8"),
    f("sdiag_protocol", 1, "u8"),
    f("pad", 2, "u16"),
    f("tidiag_states", 4, "u32"),
  ],
};

/** struct xdp_diag_msg { __u8 xdiag_family, xdiag_type; __u16 pad; __u32 xdiag_ino; __u32 xdiag_cookie[2]; } (linux/xdp_diag.h) */
export const XDP_DIAG_MSG: Layout = {
  name: "xdp_diag_msg",
  size: 16,
  fields: [
    f("xdiag_family", 0, "u8"),
    f("xdiag_type", 1, "u8"),
    f("pad", 2, "u16"),
    f("xdiag_ino", 4, "u32"),
    ...array("xdiag_cookie", 8, "u32", 2, 4),
  ],
};

/** struct xdp_diag_info { __u32 ifindex; __u32 queue_id; } */
export const XDP_DIAG_INFO: Layout = {
  name: "xdp_diag_info",
  size: 8,
  fields: [f("ifindex", 0, "u32"), f("queue_id", 4, "u32")],
};

/**
 * struct xdp_diag_umem { __u64 size; __u32 id, num_pages, chunk_size, headroom, ifindex, queue_id,
 *   flags, refs; }
 */
export const XDP_DIAG_UMEM: Layout = {
  name: "xdp_diag_umem",
  size: 40,
  fields: [
    f("size", 0, "u64"),
    ...["id", "num_pages", "chunk_size", "headroom", "ifindex", "queue_id", "flags", "refs"].map((n, i) =>
      f(n, 8 + i * 4, "u32"),
    ),
  ],
};

/**
 * struct xdp_diag_stats { __u64 n_rx_dropped, n_rx_invalid, n_rx_full, n_fill_ring_empty,
 *   n_tx_invalid, n_tx_ring_empty; }
 */
export const XDP_DIAG_STATS: Layout = {
  name: "xdp_diag_stats",
  size: 48,
  fields: [
    "n_rx_dropped",
    "n_rx_invalid",
    "n_rx_full",
    "n_fill_ring_empty",
    "n_tx_invalid",
    "n_tx_ring_empty",
  ].map((n, i) => f(n, i * 8, "u64")),
};

/**
 * struct tcp_info as /usr/include/linux/tcp.h declares it (232 bytes). Bytes 6 and 7 hold bit fields
 * (tcpi_snd_wscale:4, tcpi_rcv_wscale:4; tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2),
 * given here as whole bytes named after them.
 */
export const TCP_INFO: Layout = {
  name: "tcp_info",
  size: 232,
  fields: [
    ...["tcpi_state", "tcpi_ca_state", "tcpi_retransmits", "tcpi_probes", "tcpi_backoff", "tcpi_options"].map(
      (n, i) => f(n, i, "u8"),
    ),
    f("tcpi_snd_wscale:4,tcpi_rcv_wscale:4", 6, "u8"),
    f("tcpi_delivery_rate_app_limited:1,tcpi_fastopen_client_fail:2", 7, "u8"),
    ...[
      "tcpi_rto",
      "tcpi_ato",
      "tcpi_snd_mss",
      "tcpi_rcv_mss",
      "tcpi_unacked",
      "tcpi_sacked",
      "tcpi_lost",
      "tcpi_retrans",
      "tcpi_fackets",
      "tcpi_last_data_sent",
      "tcpi_last_ack_sent",
      "tcpi_last_data_recv",
      "tcpi_last_ack_recv",
      "tcpi_pmtu",
      "tcpi_rcv_ssthresh",
      "tcpi_rtt",
      "tcpi_rttvar",
      "tcpi_snd_ssthresh",
      "tcpi_snd_cwnd",
      "tcpi_advmss",
      "tcpi_reordering",
      "tcpi_rcv_rtt",
      "tcpi_rcv_space",
      "tcpi_total_retrans",
    ].map((n, i) => f(n, 8 + i * 4, "u32")),
    f("tcpi_pacing_rate", 104, "u64"),
    f("tcpi_max_pacing_rate", 112, "u64"),
    f("tcpi_bytes_acked", 120, "u64"),
    f("tcpi_bytes_received", 128, "u64"),
    f("tcpi_segs_out", 136, "u32"),
    f("tcpi_segs_in", 140, "u32"),
    f("tcpi_notsent_bytes", 144, "u32"),
    f("tcpi_min_rtt", 148, "u32"),
    f("tcpi_data_segs_in", 152, "u32"),
    f("tcpi_data_segs_out", 156, "u32"),
    f("tcpi_delivery_rate", 160, "u64"),
    f("tcpi_busy_time", 168, "u64"),
    f("tcpi_rwnd_limited", 176, "u64"),
    f("tcpi_sndbuf_limited", 184, "u64"),
    f("tcpi_delivered", 192, "u32"),
    f("tcpi_delivered_ce", 196, "u32"),
    f("tcpi_bytes_sent", 200, "u64"),
    f("tcpi_bytes_retrans", 208, "u64"),
    f("tcpi_dsack_dups", 216, "u32"),
    f("tcpi_reord_seen", 220, "u32"),
    f("tcpi_rcv_ooopack", 224, "u32"),
    f("tcpi_snd_wnd", 228, "u32"),
  ],
};

function put(b: Buffer, o: number, kind: FieldKind, v: number | bigint): void {
  switch (kind) {
    case "u8":
      b.writeUInt8(Number(v), o);
      break;
    case "u16":
      b.writeUInt16LE(Number(v), o);
      break;
    case "be16":
      b.writeUInt16BE(Number(v), o);
      break;
    case "u32":
      b.writeUInt32LE(Number(v) >>> 0, o);
      break;
    case "be32":
      b.writeUInt32BE(Number(v) >>> 0, o);
      break;
    case "u64":
      b.writeBigUInt64LE(BigInt(v), o);
      break;
  }
}

function get(b: Buffer, o: number, kind: FieldKind): number | bigint {
  switch (kind) {
    case "u8":
      return b.readUInt8(o);
    case "u16":
      return b.readUInt16LE(o);
    case "be16":
      return b.readUInt16BE(o);
    case "u32":
      return b.readUInt32LE(o);
    case "be32":
      return b.readUInt32BE(o);
    case "u64":
      return b.readBigUInt64LE(o);
  }
}

/** pack builds sizeof(layout) bytes with each named field set; throws on a name the layout lacks. */
export function pack(layout: Layout, values: Values): Buffer {
  const b = Buffer.alloc(layout.size);
  const known = new Set(layout.fields.map((x) => x.name));
  for (const name of Object.keys(values)) {
    if (!known.has(name)) throw new Error(`${layout.name} has no field ${name}`);
  }
  for (const x of layout.fields) put(b, x.offset, x.kind, values[x.name] ?? 0);
  return b;
}

/** unpack reads every field of `layout` from `buf` at `offset`, by C name. */
export function unpack(layout: Layout, buf: Buffer, offset = 0): Values {
  const out: Values = {};
  for (const x of layout.fields) out[x.name] = get(buf, offset + x.offset, x.kind);
  return out;
}

/** NLA_ALIGN / NLMSG_ALIGN: round up to 4, written out again here rather than imported. */
export const pad4 = (n: number): number => Math.ceil(n / 4) * 4;

/** One attribute: struct nlattr then the payload, zero-padded to 4 bytes. */
export function nlattr(type: number, payload: Buffer): Buffer {
  const out = Buffer.alloc(pad4(4 + payload.length));
  out.set(pack(NLATTR, { nla_len: 4 + payload.length, nla_type: type }));
  out.set(payload, 4);
  return out;
}

/** One message: struct nlmsghdr (nlmsg_len = header + payload, unpadded) then the payload, padded. */
export function nlmsg(
  hdr: { type: number; flags: number; seq: number; pid?: number },
  ...parts: Buffer[]
): Buffer {
  const payload = Buffer.concat(parts);
  const head = pack(NLMSGHDR, {
    nlmsg_len: 16 + payload.length,
    nlmsg_type: hdr.type,
    nlmsg_flags: hdr.flags,
    nlmsg_seq: hdr.seq,
    nlmsg_pid: hdr.pid ?? 0,
  });
  return Buffer.concat([head, payload, Buffer.alloc(pad4(payload.length) - payload.length)]);
}

/** A u32 in host order, as an attribute payload. */
export function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
}

/** A u64 in host order, as an attribute payload. */
export function u64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
}
