/**
 * MessageReader walks a buffer of netlink messages — what one receive returned — message by message,
 * checking each header against the bytes there are. It does no I/O and keeps no state beyond the
 * walk, so dumps, batches and every protocol above share it.
 *
 * Layout (linux/netlink.h): struct nlmsghdr { __u32 nlmsg_len; __u16 nlmsg_type; __u16 nlmsg_flags;
 * __u32 nlmsg_seq; __u32 nlmsg_pid; }, then the payload; the next message starts at
 * NLMSG_ALIGN(nlmsg_len). NLMSG_ERROR's payload is struct nlmsgerr { int error; struct nlmsghdr msg; }
 * (error 0 is an ack), NLMSG_DONE's is the dump's int status.
 */
import { align4, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDRLEN } from "./constants.js";
import { NetlinkProtocolError } from "./errors.js";

export class MessageReader {
  /** The buffer being walked. */
  buf: Buffer = Buffer.alloc(0);
  /** nlmsg_type, nlmsg_flags and nlmsg_seq of the current message. */
  type = 0;
  flags = 0;
  seq = 0;
  /** Offset and length of the current message's payload (after its nlmsghdr). */
  offset = 0;
  length = 0;
  // DataView reads of the headers are inlined by V8; Buffer's readUInt32LE are calls.
  private view = new DataView(this.buf.buffer, 0, 0);
  private pos = 0;
  private end = 0;
  private op = "";

  /** Walk the messages in buf[0, end); `op` names the request in errors. */
  reset(buf: Buffer, end: number, op: string): this {
    if (buf !== this.buf) {
      this.buf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    this.pos = 0;
    this.end = Math.min(end, buf.length);
    this.op = op;
    return this;
  }

  /**
   * Move to the next message; false when the buffer is used up. Throws NetlinkProtocolError for a
   * header that does not fit in what is left, and for an NLMSG_ERROR too short to hold its error.
   */
  next(): boolean {
    const o = this.pos;
    if (o >= this.end) return false;
    const v = this.view;
    const len = this.end - o >= NLMSG_HDRLEN ? v.getUint32(o, true) : 0;
    if (len < NLMSG_HDRLEN || o + len > this.end) {
      this.pos = this.end;
      throw new NetlinkProtocolError(`${this.op}: malformed netlink message at byte ${o} (length ${len})`);
    }
    this.type = v.getUint16(o + 4, true);
    this.flags = v.getUint16(o + 6, true);
    this.seq = v.getUint32(o + 8, true);
    this.offset = o + NLMSG_HDRLEN;
    this.length = len - NLMSG_HDRLEN;
    this.pos = o + align4(len);
    if (this.type === NLMSG_ERROR && this.length < 4) {
      this.pos = this.end;
      throw new NetlinkProtocolError(`${this.op}: NLMSG_ERROR at byte ${o} has no error code`);
    }
    return true;
  }

  /** Whether the current message ends an answer: NLMSG_DONE, or NLMSG_ERROR (an ack or a failure). */
  get isEnd(): boolean {
    return this.type === NLMSG_DONE || this.type === NLMSG_ERROR;
  }

  /**
   * The errno an NLMSG_ERROR or NLMSG_DONE carries, positive (0: an ack, or a dump that succeeded);
   * 0 for any other message. The kernel sends it negated.
   */
  errno(): number {
    if (!this.isEnd || this.length < 4) return 0;
    const status = this.view.getInt32(this.offset, true);
    return status < 0 ? -status : 0;
  }
}
