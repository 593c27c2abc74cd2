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

import type { NetlinkConnection } from "./connection.js";
import { NLMSG_NOOP } from "./constants.js";
import { NetlinkError } from "./errors.js";
import { MessageReader } from "./reader.js";

export class DumpCursor implements Disposable {
  /** The buffer holding the current message (the connection's receive buffer). */
  readonly buf: Buffer;
  /** Type of the current message (nlmsg_type). */
  type = 0;
  /** Offset and length of the current message's payload (after the nlmsghdr). */
  offset = 0;
  length = 0;
  /** How many datagrams were received so far: changes when `buf` holds a new chunk. */
  received = 0;
  /** Length of the chunk now in `buf`. */
  chunkLength = 0;
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
      try {
        this.chunkLength = this.conn.receive(this.op);
      } catch (err) {
        // The rest of the answer is lost or late: nothing more will be read for this request.
        this.finished = true;
        throw err;
      }
      this.received++;
      r.reset(this.buf, this.chunkLength, this.op);
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
