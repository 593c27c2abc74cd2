/**
 * packet_diag answers (/usr/include/linux/packet_diag.h): struct packet_diag_msg and its
 * attributes decoded into a PacketSocket.
 */
import { DecodeScratch } from "../netlink/index.js";
import { checkedSocketType, RAW_OR_DGRAM } from "./family-header.js";
import { decodeSkMemInfo } from "./meminfo.js";
import { type PacketRing, PacketSocket } from "./packet-socket.js";

/** sizeof(struct packet_diag_msg). */
export const PACKET_DIAG_MSG_LEN = 16;

// enum { PACKET_DIAG_INFO, PACKET_DIAG_MCLIST, ... }: they start at 0.
const PACKET_DIAG_INFO = 0;
const PACKET_DIAG_RX_RING = 2;
const PACKET_DIAG_TX_RING = 3;
const PACKET_DIAG_FANOUT = 4;
const PACKET_DIAG_UID = 5;
const PACKET_DIAG_MEMINFO = 6;
const PACKET_DIAG_FILTER = 7;
/** sizeof(struct sock_filter): one classic BPF instruction. */
const SOCK_FILTER_LEN = 8;

/**
 * Decode struct packet_diag_msg at buf[o, o + len):
 *   __u8 pdiag_family; __u8 pdiag_type; __u16 pdiag_num; __u32 pdiag_ino; __u32 pdiag_cookie[2];
 * then its attributes. The interface name is for the caller to fill in (it needs the namespace).
 * Throws DecodeError on malformed bytes.
 */
export function decodePacketDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): PacketSocket {
  const type = checkedSocketType(buf, o, len, "packet_diag_msg", PACKET_DIAG_MSG_LEN, RAW_OR_DGRAM);
  const cookie = scratch.view(buf).getBigUint64(o + 8, true);
  const s = new PacketSocket(type, buf.readUInt16LE(o + 2), buf.readUInt32LE(o + 4), cookie);
  const a = scratch.attrs.reset(buf, o + PACKET_DIAG_MSG_LEN, o + len, "packet_diag_msg attributes");
  while (a.next()) {
    const at = a.offset;
    switch (a.type) {
      case PACKET_DIAG_INFO:
        // struct packet_diag_info { __u32 pdi_index, pdi_version, pdi_reserve, pdi_copy_thresh, pdi_tstamp, pdi_flags; }
        if (a.need(24)) {
          s.ifindex = buf.readUInt32LE(at);
          s.info = {
            version: buf.readUInt32LE(at + 4),
            copyThresh: buf.readUInt32LE(at + 12),
            tstamp: buf.readUInt32LE(at + 16),
            flags: buf.readUInt32LE(at + 20),
          };
        }
        break;
      case PACKET_DIAG_RX_RING:
        if (a.need(28)) s.rxRing = decodeRing(buf, at);
        break;
      case PACKET_DIAG_TX_RING:
        if (a.need(28)) s.txRing = decodeRing(buf, at);
        break;
      case PACKET_DIAG_FANOUT: {
        // u32: the group id in the low 16 bits, the type (PACKET_FANOUT_*) and flags above.
        const v = a.u32();
        s.fanout = { id: v & 0xffff, type: (v >>> 16) & 0xff };
        break;
      }
      case PACKET_DIAG_UID:
        s.uid = a.u32();
        break;
      case PACKET_DIAG_MEMINFO:
        if (a.need(32)) {
          s.skmem = decodeSkMemInfo(buf, at, a.length);
          s.rqueue = s.skmem.rmemAlloc;
        }
        break;
      case PACKET_DIAG_FILTER:
        s.filterLength = Math.floor(a.length / SOCK_FILTER_LEN);
        break;
    }
  }
  if (a.error) throw a.error;
  return s;
}

/** struct packet_diag_ring { __u32 pdr_block_size, block_nr, frame_size, frame_nr, retire_tmo, sizeof_priv, features; } */
function decodeRing(buf: Buffer, o: number): PacketRing {
  return {
    blockSize: buf.readUInt32LE(o),
    blockNr: buf.readUInt32LE(o + 4),
    frameSize: buf.readUInt32LE(o + 8),
    frameNr: buf.readUInt32LE(o + 12),
    retireTmo: buf.readUInt32LE(o + 16),
    sizeofPriv: buf.readUInt32LE(o + 20),
    features: buf.readUInt32LE(o + 24),
  };
}
