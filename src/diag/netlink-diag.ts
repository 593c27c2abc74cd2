/**
 * netlink_diag answers (/usr/include/linux/netlink_diag.h): struct netlink_diag_msg and its
 * attributes decoded into a NetlinkSocket.
 */
import { DecodeScratch } from "../netlink/index.js";
import { checkedSocketType, RAW_OR_DGRAM } from "./family-header.js";
import { decodeSkMemInfo } from "./meminfo.js";
import { NetlinkSocket } from "./netlink-socket.js";

/** sizeof(struct netlink_diag_msg). */
export const NETLINK_DIAG_MSG_LEN = 28;

// enum { NETLINK_DIAG_MEMINFO, NETLINK_DIAG_GROUPS, ... }: they start at 0.
const NETLINK_DIAG_MEMINFO = 0;
const NETLINK_DIAG_GROUPS = 1;
/** ndiag_state of a socket with a default destination (net/netlink/af_netlink.h). */
const NETLINK_CONNECTED = 1;

/**
 * Decode struct netlink_diag_msg at buf[o, o + len):
 *   __u8 ndiag_family, ndiag_type, ndiag_protocol, ndiag_state; __u32 ndiag_portid;
 *   __u32 ndiag_dst_portid; __u32 ndiag_dst_group; __u32 ndiag_ino; __u32 ndiag_cookie[2];
 * then its attributes. Port ids are read signed, as ss prints them. Throws DecodeError.
 */
export function decodeNetlinkDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): NetlinkSocket {
  const type = checkedSocketType(buf, o, len, "netlink_diag_msg", NETLINK_DIAG_MSG_LEN, RAW_OR_DGRAM);
  const ids = {
    portid: buf.readInt32LE(o + 4),
    connected: buf[o + 3] === NETLINK_CONNECTED,
    dstPortid: buf.readInt32LE(o + 8),
    dstGroup: buf.readUInt32LE(o + 12),
  };
  const cookie = scratch.view(buf).getBigUint64(o + 20, true);
  const s = new NetlinkSocket(type, buf[o + 2]!, ids, buf.readUInt32LE(o + 16), cookie);
  const a = scratch.attrs.reset(buf, o + NETLINK_DIAG_MSG_LEN, o + len, "netlink_diag_msg attributes");
  while (a.next()) {
    switch (a.type) {
      case NETLINK_DIAG_MEMINFO:
        if (a.need(32)) {
          s.skmem = decodeSkMemInfo(buf, a.offset, a.length);
          s.rqueue = s.skmem.rmemAlloc;
          s.wqueue = s.skmem.wmemAlloc;
        }
        break;
      case NETLINK_DIAG_GROUPS:
        // An array of unsigned long masks: read as u32 words, low word first.
        for (let i = 0; i + 4 <= a.length; i += 4) s.groups.push(buf.readUInt32LE(a.offset + i));
        break;
    }
  }
  if (a.error) throw a.error;
  return s;
}
