/**
 * Exchanges on a connection: the answer to one dump request, read message by message
 * (DumpCursor), and the answers to a batch — many requests in one write, each with its own
 * sequence number, answered by the kernel in order: either every request asks for an ack
 * (collectAcks), or only failures are answered and a final barrier marks the end (ErrorsOnlyBatch).
 */
import { type AbortSignalLike, Errno, SysError } from "../sys/errors.js";
import type { NetlinkConnection } from "./connection.js";
import { NetlinkError, NetlinkTimeoutError } from "./errors.js";
import {
  MessageReader,
  MessageWriter,
  NLM_F_ACK,
  NLM_F_REQUEST,
  NLMSG_ERROR,
  NLMSG_NOOP,
} from "./message.js";

/**
 * DumpCursor walks the answer to one request, message by message, over the connection's reused
 * receive buffer: `next()` moves to the next payload message and exposes where it lies, so the
 * caller decodes in place and nothing is allocated per message.
 *
 * It enforces the rules that real netlink code got wrong: messages with another sequence number
 * are skipped (leftovers of an abandoned request), NLMSG_ERROR ends the answer with a typed error
 * (a failed dump sends no NLMSG_DONE, so waiting for one would hang), NLMSG_DONE's status is
 * checked, and a cursor closed early drains the rest so the connection can serve the next request.
 */

export class DumpCursor implements Disposable {
  /** The buffer holding the current message (the connection's receive buffer). */
  readonly buf: Buffer;
  /** Type of the current message (nlmsg_type). */
  type = 0;
  /** Offset and length of the current message's payload (after the nlmsghdr). */
  offset = 0;
  length = 0;
  /** How many datagrams were received so far. */
  received = 0;
  private readonly reader = new MessageReader();
  private finished = false;

  /** `seq` is the sequence number of the request already sent on `conn`; `op` names it in errors. */
  constructor(
    private readonly conn: NetlinkConnection,
    private readonly seq: number,
    private readonly op: string,
  ) {
    this.buf = conn.recvBuf;
  }

  /**
   * Move to the next payload message; false when the answer is complete. Throws NetlinkError when
   * the kernel answered with an error, NetlinkTimeoutError / NetlinkProtocolError / SysError from
   * the connection.
   */
  next(): boolean {
    const r = this.reader;
    for (;;) {
      let more: boolean;
      try {
        more = r.next();
      } catch (err) {
        this.finished = true;
        throw err;
      }
      if (more) {
        if (r.seq !== this.seq || r.type === NLMSG_NOOP) continue;
        if (r.isEnd) {
          const errno = r.errno();
          this.finished = true;
          r.reset(this.buf, 0, this.op);
          if (errno !== 0) throw new NetlinkError(this.op, errno, this.seq);
          return false;
        }
        this.type = r.type;
        this.offset = r.offset;
        this.length = r.length;
        return true;
      }
      if (this.finished) return false;
      let length: number;
      try {
        length = this.conn.receive(this.op);
      } catch (err) {
        // The rest of the answer is lost or late: nothing more will be read for this request.
        this.finished = true;
        throw err;
      }
      this.received++;
      r.reset(this.buf, length, this.op);
    }
  }

  /** Drain what is left of the answer, so the connection can carry another request. */
  close(): void {
    try {
      while (this.next()) {
        // discard
      }
    } catch {
      // The answer ended in an error nobody is waiting for any more.
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

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

/**
 * ErrorsOnlyBatch holds the buffer of errors-only batches and reads their answers: the caller
 * writes up to `capacity` requests (without NLM_F_ACK) into `writer`, then send() appends the
 * barrier, sends the whole write and returns each request's errno (0: it succeeded). Memory is
 * bounded by the capacity, whatever the number of requests.
 */
export class ErrorsOnlyBatch {
  /** Requests one write may carry (see batchCapacity). */
  readonly capacity: number;
  private readonly bytes: number;
  #writer: MessageWriter | undefined;
  #errnos: Int32Array | undefined;

  /** Room for `wanted` requests of at most `requestBytes` each, capped by `queueBytes`. */
  constructor(queueBytes: number, wanted: number, requestBytes: number) {
    this.capacity = batchCapacity(queueBytes, wanted);
    this.bytes = this.capacity * requestBytes + BARRIER_BYTES;
  }

  /**
   * Where the requests are written. Its buffer is made on first use (a namespace with nothing to
   * send needs none) and not zeroed: the writer zeroes what it reserves, so only the pages a batch
   * fills are ever touched.
   */
  get writer(): MessageWriter {
    this.#writer ??= new MessageWriter(Buffer.allocUnsafe(this.bytes));
    return this.#writer;
  }

  /**
   * Append a barrier numbered `barrierSeq` to the `count` requests written (numbered firstSeq,
   * firstSeq+1, ...), pass the bytes to `check` (which may throw to refuse them: nothing is sent),
   * send them on `conn` and collect the answers. The errnos returned are valid until the next
   * send. Throws what the connection throws: the caller then cannot know whether the kernel acted
   * on the batch (batchErrno names what stands for each of its requests).
   */
  send(
    conn: NetlinkConnection,
    firstSeq: number,
    count: number,
    barrierSeq: number,
    op: string,
    check?: (buf: Buffer, length: number) => void,
  ): Int32Array {
    const w = this.writer;
    writeBarrier(w, barrierSeq);
    check?.(w.buf, w.length);
    this.#errnos ??= new Int32Array(this.capacity);
    const errnos = this.#errnos;
    errnos.fill(0, 0, count);
    conn.send(w.buf, w.length);
    collectErrors(conn, firstSeq, count, barrierSeq, op, (index, errno) => {
      errnos[index] = errno;
    });
    return errnos;
  }
}

/** How a batcher built on ErrorsOnlyBatch goes about it. */
export interface BatchOptions<Listener> {
  /** Requests per write, at most (fewer when the receive queue could not hold their failures). */
  batchSize?: number | undefined;
  /** Told each item's outcome as soon as it is known. */
  onOutcome?: Listener | undefined;
  /** Checked before every write: once aborted, nothing more is sent. */
  signal?: AbortSignalLike | undefined;
}
