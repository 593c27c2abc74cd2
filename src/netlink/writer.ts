/**
 * MessageWriter builds netlink messages into a caller's Buffer: begin() reserves the nlmsghdr,
 * the payload is written field by field, end() back-patches nlmsg_len. Several messages may be
 * written back to back and sent in one write (the kernel processes them in order). Nothing here
 * allocates, so request serialisation costs no garbage however often it runs.
 */

import { align4, NLA_HDRLEN, NLMSG_HDRLEN } from "./constants.js";
import { NetlinkProtocolError } from "./errors.js";

export class MessageWriter {
  /** The buffer written into; owned by the caller, who sends bytes [0, length). */
  readonly buf: Buffer;
  /** Bytes written so far, always 4-byte aligned between messages. */
  length = 0;
  private msgStart = -1;
  private attrStart = -1;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  /** Forget everything written; the buffer is reused. */
  reset(): this {
    this.length = 0;
    this.msgStart = -1;
    this.attrStart = -1;
    return this;
  }

  /** Start a message: struct nlmsghdr { len (patched by end), type, flags, seq, pid = 0 }. */
  begin(type: number, flags: number, seq: number): this {
    this.ensure(NLMSG_HDRLEN);
    const b = this.buf;
    const o = this.length;
    this.msgStart = o;
    b.writeUInt32LE(0, o);
    b.writeUInt16LE(type, o + 4);
    b.writeUInt16LE(flags, o + 6);
    b.writeUInt32LE(seq >>> 0, o + 8);
    b.writeUInt32LE(0, o + 12);
    this.length = o + NLMSG_HDRLEN;
    return this;
  }

  /** Reserve `n` zeroed bytes and return their offset, for a struct encoder to fill in place. */
  reserve(n: number): number {
    this.ensure(n);
    const o = this.length;
    this.buf.fill(0, o, o + n);
    this.length = o + n;
    return o;
  }

  /** Append an attribute (struct nlattr) whose payload is `payload`, padded to 4 bytes. */
  attr(type: number, payload: Buffer): this {
    this.beginAttr(type);
    this.ensure(payload.length);
    payload.copy(this.buf, this.length);
    this.length += payload.length;
    return this.endAttr();
  }

  /** Append a u32 attribute. */
  attrU32(type: number, value: number): this {
    this.beginAttr(type);
    this.ensure(4);
    this.buf.writeUInt32LE(value >>> 0, this.length);
    this.length += 4;
    return this.endAttr();
  }

  /** Finish the current message: patch nlmsg_len and pad to 4 bytes. */
  end(): this {
    if (this.msgStart < 0) throw new NetlinkProtocolError("MessageWriter.end() without begin()");
    this.buf.writeUInt32LE(this.length - this.msgStart, this.msgStart);
    this.pad();
    this.msgStart = -1;
    return this;
  }

  private beginAttr(type: number): void {
    this.ensure(NLA_HDRLEN);
    this.attrStart = this.length;
    this.buf.writeUInt16LE(type, this.length + 2);
    this.length += NLA_HDRLEN;
  }

  private endAttr(): this {
    this.buf.writeUInt16LE(this.length - this.attrStart, this.attrStart);
    this.pad();
    return this;
  }

  private pad(): void {
    const aligned = align4(this.length);
    this.ensure(aligned - this.length);
    this.buf.fill(0, this.length, aligned);
    this.length = aligned;
  }

  private ensure(n: number): void {
    if (this.length + n > this.buf.length) {
      throw new NetlinkProtocolError(
        `message does not fit: ${this.length + n} bytes needed, buffer holds ${this.buf.length}`,
      );
    }
  }
}
