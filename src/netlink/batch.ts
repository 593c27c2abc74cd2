/**
 * Acks for a batch: many requests sent in one write, each with NLM_F_ACK and its own sequence
 * number, answered by the kernel in order with one NLMSG_ERROR each (error 0 = success).
 */

import type { NetlinkSocket } from "./connection.js";
import { align4, NLMSG_ERROR, NLMSG_HDRLEN } from "./constants.js";
import { NetlinkProtocolError } from "./errors.js";

/**
 * collectAcks receives until each of the `count` requests numbered firstSeq, firstSeq+1, ... has been
 * acked, calling onAck(index, errno) once per request (index = seq - firstSeq, errno 0 on success).
 * Messages with other sequence numbers are ignored. Throws NetlinkTimeoutError if the kernel stops
 * answering; the caller knows from its own bookkeeping which requests were not acked.
 */
export function collectAcks(
  conn: NetlinkSocket,
  firstSeq: number,
  count: number,
  op: string,
  onAck: (index: number, errno: number) => void,
): void {
  const b = conn.recvBuf;
  let remaining = count;
  while (remaining > 0) {
    const end = conn.receive(op);
    for (let o = 0; o < end; ) {
      const len = end - o >= NLMSG_HDRLEN ? b.readUInt32LE(o) : 0;
      if (len < NLMSG_HDRLEN || o + len > end) {
        throw new NetlinkProtocolError(`${op}: malformed netlink message at byte ${o} (length ${len})`);
      }
      const index = (b.readUInt32LE(o + 8) - firstSeq) >>> 0;
      if (b.readUInt16LE(o + 4) === NLMSG_ERROR && index < count && len >= NLMSG_HDRLEN + 4) {
        onAck(index, -b.readInt32LE(o + NLMSG_HDRLEN) | 0);
        remaining--;
      }
      o += align4(len);
    }
  }
}
