/**
 * AttributeReader walks a run of netlink attributes (struct nlattr / struct rtattr: u16 len,
 * u16 type, payload, padded to 4 bytes) inside a buffer, without allocating. Typed getters check
 * the payload length; the first problem sticks in `error` and ends the walk, so a caller checks
 * once at the end instead of after every read (as mdlayher/netlink's AttributeDecoder does).
 */
import { align4, NLA_HDRLEN } from "./constants.js";
import { DecodeError } from "./errors.js";

export class AttributeReader {
  buf: Buffer = Buffer.alloc(0);
  /** Type of the current attribute (NLA_TYPE_MASK applied: nested/byte-order flags removed). */
  type = 0;
  /** Offset and length of the current attribute's payload. */
  offset = 0;
  length = 0;
  /** The first decoding problem met, if any; the walk stops at it. */
  error: DecodeError | undefined = undefined;
  private pos = 0;
  private end = 0;
  private what = "";

  /** Start walking the attributes in buf[start, end); `what` names the container for errors. */
  reset(buf: Buffer, start: number, end: number, what: string): this {
    this.buf = buf;
    this.pos = start;
    this.end = end;
    this.what = what;
    this.error = undefined;
    return this;
  }

  /** Advance to the next attribute; false at the end or on a malformed header (see `error`). */
  next(): boolean {
    if (this.error || this.pos >= this.end) return false;
    if (this.end - this.pos < NLA_HDRLEN) return this.fail(this.pos, `${this.end - this.pos} trailing bytes`);
    const len = this.buf.readUInt16LE(this.pos);
    if (len < NLA_HDRLEN || this.pos + len > this.end) {
      return this.fail(this.pos, `attribute length ${len} does not fit in ${this.end - this.pos} bytes`);
    }
    this.type = this.buf.readUInt16LE(this.pos + 2) & 0x3fff;
    this.offset = this.pos + NLA_HDRLEN;
    this.length = len - NLA_HDRLEN;
    this.pos += align4(len);
    return true;
  }

  /** The payload as u8; requires at least 1 byte. */
  u8(): number {
    return this.need(1) ? this.buf[this.offset]! : 0;
  }

  /** The payload as a host-order u32; requires at least 4 bytes. */
  u32(): number {
    return this.need(4) ? this.buf.readUInt32LE(this.offset) : 0;
  }

  /** The payload as a host-order u64; requires at least 8 bytes. */
  u64(): bigint {
    return this.need(8) ? this.buf.readBigUInt64LE(this.offset) : 0n;
  }

  /** The payload as a NUL-terminated (or unterminated) string. */
  string(): string {
    const end = this.offset + this.length;
    let stop = this.offset;
    while (stop < end && this.buf[stop] !== 0) stop++;
    return this.buf.toString("utf8", this.offset, stop);
  }

  /** Check that the payload holds at least `n` bytes, else record an error. */
  need(n: number): boolean {
    if (this.length >= n) return true;
    this.fail(this.offset, `attribute ${this.type} of ${this.what} has ${this.length} bytes, needs ${n}`);
    return false;
  }

  private fail(offset: number, detail: string): false {
    this.error ??= new DecodeError(this.what, offset, detail);
    this.pos = this.end;
    return false;
  }
}
