/**
 * Answers to a batch: many requests sent in one write, each with its own sequence number, answered
 * by the kernel in order. Either every request asks for an ack (collectAcks), or only failures are
 * answered and a final barrier marks the end (writeBarrier + collectErrors).
 */

import { Errno, SysError } from "../sys/errors.js";
import type { NetlinkConnection } from "./connection.js";
import { NLM_F_ACK, NLM_F_REQUEST, NLMSG_ERROR, NLMSG_NOOP } from "./constants.js";
import { NetlinkTimeoutError } from "./errors.js";
import { MessageReader } from "./reader.js";
import type { MessageWriter } from "./writer.js";

/**
 * Receive answers (NLMSG_ERROR messages: an ack, error 0, or a failure) and hand each one's sequence
 * number and errno to `answer` until it returns true. Other messages are skipped. Throws
 * NetlinkProtocolError on a malformed message, NetlinkTimeoutError / SysError from the connection.
 */
function readAnswers(
  conn: NetlinkConnection,
  op: string,
  answer: (seq: number, errno: number) => boolean,
): void {
  const r = new MessageReader();
  for (;;) {
    r.reset(conn.recvBuf, conn.receive(op), op);
    while (r.next()) {
      if (r.type === NLMSG_ERROR && answer(r.seq, r.errno())) return;
    }
  }
}

/**
 * What one failure's answer costs in the receive queue: 36 bytes with NETLINK_CAP_ACK, in an skb of
 * well under 1 KiB.
 */
const ANSWER_BYTES = 1024;
/** sizeof(struct nlmsghdr): a barrier is a header alone. */
export const BARRIER_BYTES = 16;

/**
 * How many requests one errors-only write may carry: `wanted` (at least 1), but never more than the
 * receive queue (`queueBytes`, as the kernel granted it) could hold if every request failed — so no
 * answer is ever dropped (ENOBUFS). With the 4 MiB queue of a privileged caller, that is 4,096.
 */
export function batchCapacity(queueBytes: number, wanted: number): number {
  const room = Math.max(1, Math.floor(queueBytes / ANSWER_BYTES));
  return Math.max(1, Math.min(Math.floor(wanted) || 1, room));
}

/**
 * collectAcks receives until each of the `count` requests numbered firstSeq, firstSeq+1, ... has been
 * acked, calling onAck(index, errno) once per request (index = seq - firstSeq, errno 0 on success).
 * Messages with other sequence numbers are ignored. Throws NetlinkTimeoutError if the kernel stops
 * answering; the caller knows from its own bookkeeping which requests were not acked.
 */
export function collectAcks(
  conn: NetlinkConnection,
  firstSeq: number,
  count: number,
  op: string,
  onAck: (index: number, errno: number) => void,
): void {
  let remaining = count;
  if (remaining <= 0) return;
  readAnswers(conn, op, (seq, errno) => {
    const index = (seq - firstSeq) >>> 0;
    if (index < count) {
      onAck(index, errno);
      remaining--;
    }
    return remaining === 0;
  });
}

/**
 * Append a barrier to a batch: NLMSG_NOOP with NLM_F_ACK. The kernel skips control messages but
 * acks them (net/netlink/af_netlink.c netlink_rcv_skb), so its ack says "everything before me in
 * this write has been processed".
 */
export function writeBarrier(w: MessageWriter, seq: number): void {
  w.begin(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, seq).end();
}

/**
 * collectErrors reads the answers to a batch whose `count` requests (numbered firstSeq, firstSeq+1,
 * ...) were sent WITHOUT NLM_F_ACK, followed by a barrier numbered `barrierSeq`. The kernel answers
 * a request only when it fails, and in order; so every failure arrives before the barrier's ack,
 * and a request with no answer by then succeeded. Calls onError(index, errno) per failure. This
 * takes one receive per failure instead of one per request.
 *
 * Throws SysError ENOBUFS if the kernel had to drop answers (the receive queue overflowed): the
 * caller cannot know which requests failed and must not count them as done.
 */
export function collectErrors(
  conn: NetlinkConnection,
  firstSeq: number,
  count: number,
  barrierSeq: number,
  op: string,
  onError: (index: number, errno: number) => void,
): void {
  readAnswers(conn, op, (seq, errno) => {
    if (seq === barrierSeq) return true;
    const index = (seq - firstSeq) >>> 0;
    if (index < count && errno !== 0) onError(index, errno);
    return false;
  });
}

/**
 * The errno that stands for each request of a batch whose answers could not be read to the end:
 * the system call's (ENOBUFS: answers were dropped), ETIMEDOUT when none came in time, EIO for an
 * answer that broke the netlink rules. Whether the kernel acted on those requests is unknown.
 */
export function batchErrno(err: unknown): number {
  if (err instanceof SysError) return err.errno;
  if (err instanceof NetlinkTimeoutError) return Errno.ETIMEDOUT;
  return Errno.EIO;
}
