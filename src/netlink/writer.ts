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
    // Byte stores: Buffer's write methods check their arguments on every call.
    zero(b, o, o + 4);
    b[o + 4] = type & 0xff;
    b[o + 5] = type >>> 8;
    b[o + 6] = flags & 0xff;
    b[o + 7] = flags >>> 8;
    putU32LE(b, o + 8, seq >>> 0);
    zero(b, o + 12, o + 16);
    this.length = o + NLMSG_HDRLEN;
    return this;
  }

  /** Reserve `n` zeroed bytes and return their offset, for a struct encoder to fill in place. */
  reserve(n: number): number {
    this.ensure(n);
    const o = this.length;
    zero(this.buf, o, o + n);
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
    putU32LE(this.buf, this.msgStart, this.length - this.msgStart);
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
    zero(this.buf, this.length, aligned);
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

/** Zero bytes [from, to): a loop for the few bytes of a header or padding, fill() (a native call) past that. */
function zero(b: Buffer, from: number, to: number): void {
  if (to - from > 64) {
    b.fill(0, from, to);
    return;
  }
  for (let i = from; i < to; i++) b[i] = 0;
}

/**
 * Store a u32 little-endian (host order here) at `o`, which the caller has checked is in the
 * buffer: four byte stores cost less than Buffer.writeUInt32LE's argument checks.
 */
export function putU32LE(b: Buffer, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = v >>> 24;
}
