/**
 * vsock_diag answers (/usr/include/linux/vm_sockets_diag.h): struct vsock_diag_msg decoded into a
 * VsockSocket. net/vmw_vsock/diag.c fills the struct and nothing else (no attributes).
 */
import { DecodeScratch } from "../netlink/index.js";
import { checkedSocketType, type SocketTypes } from "./family-header.js";
import { stateName } from "./states.js";
import { VsockSocket, type VsockType } from "./vsock-socket.js";

/** sizeof(struct vsock_diag_msg). */
export const VSOCK_DIAG_MSG_LEN = 32;

/** SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET. */
const VSOCK_TYPES: SocketTypes<VsockType> = { 1: "stream", 2: "dgram", 5: "seqpacket" };

/**
 * Decode struct vsock_diag_msg at buf[o, o + len):
 *   __u8 vdiag_family, vdiag_type, vdiag_state, vdiag_shutdown; __u32 vdiag_src_cid, vdiag_src_port;
 *   __u32 vdiag_dst_cid, vdiag_dst_port; __u32 vdiag_ino; __u32 vdiag_cookie[2];
 * Throws DecodeError on a short message or an unknown socket type.
 */
export function decodeVsockDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): VsockSocket {
  const type = checkedSocketType(buf, o, len, "vsock_diag_msg", VSOCK_DIAG_MSG_LEN, VSOCK_TYPES);
  const ends = {
    srcCid: buf.readUInt32LE(o + 4),
    srcPort: buf.readUInt32LE(o + 8),
    dstCid: buf.readUInt32LE(o + 12),
    dstPort: buf.readUInt32LE(o + 16),
  };
  const cookie = scratch.view(buf).getBigUint64(o + 24, true);
  return new VsockSocket(type, stateName(buf[o + 2]!), buf[o + 3]!, ends, buf.readUInt32LE(o + 20), cookie);
}
