/**
 * DumpCursor walks the answer to one request, message by message, over the connection's reused
 * receive buffer: `next()` moves to the next payload message and exposes where it lies, so the
 * caller decodes in place and nothing is allocated per message.
 *
 * It enforces the rules that real netlink code got wrong: messages with another sequence number
 * are skipped (leftovers of an abandoned request), NLMSG_ERROR ends the answer with a typed error
 * (a failed dump sends no NLMSG_DONE, so waiting for one would hang), NLMSG_DONE's status is
 * checked, and a cursor closed early drains the rest so the socket can serve the next request.
 */

import type { NetlinkSocket } from "./connection.js";
import { align4, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDRLEN, NLMSG_NOOP } from "./constants.js";
import { NetlinkError, NetlinkProtocolError } from "./errors.js";

export class DumpCursor implements Disposable {
  /** The buffer holding the current message (the connection's receive buffer). */
  readonly buf: Buffer;
  // DataView reads of the headers are inlined by V8, Buffer's readUInt32LE are calls.
  private readonly view: DataView;
  /** Type of the current message (nlmsg_type). */
  type = 0;
  /** Offset and length of the current message's payload (after the nlmsghdr). */
  offset = 0;
  length = 0;
  /** How many datagrams were received so far: changes when `buf` holds a new chunk. */
  received = 0;
  /** Length of the chunk now in `buf`. */
  chunkLength = 0;
  private pos = 0;
  private end = 0;
  private finished = false;

  /** `seq` is the sequence number of the request already sent on `conn`; `op` names it in errors. */
  constructor(
    private readonly conn: NetlinkSocket,
    private readonly seq: number,
    private readonly op: string,
  ) {
    this.buf = conn.recvBuf;
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  /**
   * Move to the next payload message; false when the answer is complete. Throws NetlinkError when
   * the kernel answered with an error, NetlinkTimeoutError / NetlinkProtocolError from the socket.
   */
  next(): boolean {
    const v = this.view;
    for (;;) {
      if (this.pos < this.end) {
        const o = this.pos;
        const len = this.end - o >= NLMSG_HDRLEN ? v.getUint32(o, true) : 0;
        if (len < NLMSG_HDRLEN || o + len > this.end) {
          this.finished = true;
          throw new NetlinkProtocolError(
            `${this.op}: malformed netlink message at byte ${o} (length ${len})`,
          );
        }
        this.pos = o + align4(len);
        if (v.getUint32(o + 8, true) !== this.seq) continue;
        const type = v.getUint16(o + 4, true);
        if (type === NLMSG_DONE || type === NLMSG_ERROR) {
          this.finished = true;
          this.end = this.pos;
          const status = len >= NLMSG_HDRLEN + 4 ? v.getInt32(o + NLMSG_HDRLEN, true) : 0;
          if (status < 0) throw new NetlinkError(this.op, -status, this.seq);
          return false;
        }
        if (type === NLMSG_NOOP) continue;
        this.type = type;
        this.offset = o + NLMSG_HDRLEN;
        this.length = len - NLMSG_HDRLEN;
        return true;
      }
      if (this.finished) return false;
      this.end = this.conn.receive(this.op);
      this.chunkLength = this.end;
      this.received++;
      this.pos = 0;
    }
  }

  /** Drain what is left of the answer, so the socket can carry another request. */
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
