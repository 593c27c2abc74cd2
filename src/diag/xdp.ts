/**
 * xdp_diag answers (/usr/include/linux/xdp_diag.h): struct xdp_diag_msg and its attributes
 * decoded into an XdpSocket, as net/xdp/xsk_diag.c fills them.
 */
import { DecodeScratch } from "../netlink/index.js";
import { checkedSocketType, type SocketTypes } from "./family-header.js";
import { decodeSkMemInfo } from "./meminfo.js";
import { type XdpRing, XdpSocket } from "./xdp-socket.js";

/** sizeof(struct xdp_diag_msg). */
export const XDP_DIAG_MSG_LEN = 16;

// enum { XDP_DIAG_NONE, XDP_DIAG_INFO, ... }: they start at 1.
const XDP_DIAG_INFO = 1;
const XDP_DIAG_UID = 2;
const XDP_DIAG_RX_RING = 3;
const XDP_DIAG_TX_RING = 4;
const XDP_DIAG_UMEM = 5;
const XDP_DIAG_UMEM_FILL_RING = 6;
const XDP_DIAG_UMEM_COMPLETION_RING = 7;
const XDP_DIAG_MEMINFO = 8;
const XDP_DIAG_STATS = 9;
/** sizeof(struct xdp_diag_umem), sizeof(struct xdp_diag_stats). */
const XDP_DIAG_UMEM_LEN = 40;
const XDP_DIAG_STATS_LEN = 48;

/** SOCK_RAW: the one type AF_XDP sockets come in. */
const XDP_TYPES: SocketTypes<"raw"> = { 3: "raw" };

/**
 * Decode struct xdp_diag_msg at buf[o, o + len):
 *   __u8 xdiag_family; __u8 xdiag_type; __u16 pad; __u32 xdiag_ino; __u32 xdiag_cookie[2];
 * then its attributes. The interface name is for the caller to fill in (it needs the namespace).
 * Throws DecodeError on malformed bytes.
 */
export function decodeXdpDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): XdpSocket {
  checkedSocketType(buf, o, len, "xdp_diag_msg", XDP_DIAG_MSG_LEN, XDP_TYPES);
  const s = new XdpSocket(buf.readUInt32LE(o + 4), scratch.view(buf).getBigUint64(o + 8, true));
  const a = scratch.attrs.reset(buf, o + XDP_DIAG_MSG_LEN, o + len, "xdp_diag_msg attributes");
  while (a.next()) {
    const at = a.offset;
    switch (a.type) {
      case XDP_DIAG_INFO:
        // struct xdp_diag_info { __u32 ifindex; __u32 queue_id; }
        if (a.need(8)) {
          s.ifindex = buf.readUInt32LE(at);
          s.queueId = buf.readUInt32LE(at + 4);
        }
        break;
      case XDP_DIAG_UID:
        s.uid = a.u32();
        break;
      case XDP_DIAG_RX_RING:
        s.rxRing = ring(a.u32());
        break;
      case XDP_DIAG_TX_RING:
        s.txRing = ring(a.u32());
        break;
      case XDP_DIAG_UMEM:
        // struct xdp_diag_umem { __u64 size; __u32 id, num_pages, chunk_size, headroom, ifindex, queue_id, flags, refs; }
        if (a.need(XDP_DIAG_UMEM_LEN))
          s.umem = {
            id: buf.readUInt32LE(at + 8),
            size: buf.readBigUInt64LE(at),
            numPages: buf.readUInt32LE(at + 12),
            chunkSize: buf.readUInt32LE(at + 16),
            headroom: buf.readUInt32LE(at + 20),
            ifindex: buf.readUInt32LE(at + 24),
            queueId: buf.readUInt32LE(at + 28),
            flags: buf.readUInt32LE(at + 32),
            refs: buf.readUInt32LE(at + 36),
          };
        break;
      case XDP_DIAG_UMEM_FILL_RING:
        s.fillRing = ring(a.u32());
        break;
      case XDP_DIAG_UMEM_COMPLETION_RING:
        s.completionRing = ring(a.u32());
        break;
      case XDP_DIAG_MEMINFO:
        if (a.need(32)) {
          s.skmem = decodeSkMemInfo(buf, at, a.length);
          s.rqueue = s.skmem.rmemAlloc;
        }
        break;
      case XDP_DIAG_STATS:
        // struct xdp_diag_stats { __u64 n_rx_dropped, n_rx_invalid, n_rx_full, n_fill_ring_empty, n_tx_invalid, n_tx_ring_empty; }
        if (a.need(XDP_DIAG_STATS_LEN))
          s.stats = {
            rxDropped: buf.readBigUInt64LE(at),
            rxInvalid: buf.readBigUInt64LE(at + 8),
            rxFull: buf.readBigUInt64LE(at + 16),
            fillRingEmpty: buf.readBigUInt64LE(at + 24),
            txInvalid: buf.readBigUInt64LE(at + 32),
            txRingEmpty: buf.readBigUInt64LE(at + 40),
          };
        break;
    }
  }
  if (a.error) throw a.error;
  return s;
}

/** struct xdp_diag_ring { __u32 entries; } */
function ring(entries: number): XdpRing {
  return { entries };
}
