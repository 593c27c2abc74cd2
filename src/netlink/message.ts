/**
 * Netlink framing: the numbers of linux/netlink.h, MessageWriter (requests built into a reused
 * buffer), MessageReader (a received buffer walked message by message), AttributeReader (a run of
 * attributes walked inside a message) and DecodeScratch (the reader state decoders reuse). All of
 * it is pure: no I/O, nothing allocated per message, so every protocol above shares it and the
 * tests check it byte for byte.
 */
import { MisuseError } from "../sys/errors.js";
import { DecodeError, NetlinkProtocolError } from "./errors.js";

// Netlink constants, named as in /usr/include/linux/netlink.h.

/** sizeof(struct nlmsghdr): u32 len, u16 type, u16 flags, u32 seq, u32 pid. */
export const NLMSG_HDRLEN = 16;
/** sizeof(struct nlmsgerr) without the echoed header: int error, then the request's nlmsghdr. */
export const NLMSGERR_LEN = 4 + NLMSG_HDRLEN;
/** sizeof(struct nlattr) / struct rtattr: u16 len, u16 type. */
export const NLA_HDRLEN = 4;

export const NLMSG_NOOP = 1;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLMSG_OVERRUN = 4;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;

export const SOL_NETLINK = 270;
/** Acks carry only the request's header, not its payload: keeps a batch's acks small. */
export const NETLINK_CAP_ACK = 10;
export const NETLINK_EXT_ACK = 11;
export const NETLINK_GET_STRICT_CHK = 12;

/** #define NLMSG_ALIGN(len) (((len)+NLMSG_ALIGNTO-1) & ~(NLMSG_ALIGNTO-1)), NLMSG_ALIGNTO = 4; NLA_ALIGN is the same. */
export function align4(len: number): number {
  return (len + 3) & ~3;
}

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

/** What a reader holds before its first reset: one empty buffer for all, none allocated per reader. */
const NO_BYTES = Buffer.alloc(0);
const NO_VIEW: DataView = new DataView(new ArrayBuffer(0));

export class MessageReader {
  /** The buffer being walked. */
  buf: Buffer = NO_BYTES;
  /** nlmsg_type, nlmsg_flags and nlmsg_seq of the current message. */
  type = 0;
  flags = 0;
  seq = 0;
  /** Offset and length of the current message's payload (after its nlmsghdr). */
  offset = 0;
  length = 0;
  // DataView reads of the headers are inlined by V8; Buffer's readUInt32LE are calls.
  private view = NO_VIEW;
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

/**
 * MessageWriter builds netlink messages into a caller's Buffer: begin() reserves the nlmsghdr,
 * the payload is written field by field, end() back-patches nlmsg_len. Several messages may be
 * written back to back and sent in one write (the kernel processes them in order). Nothing here
 * allocates, so request serialisation costs no garbage however often it runs.
 */

export class MessageWriter {
  /** The buffer written into; owned by the caller, who sends bytes [0, length). */
  readonly buf: Buffer;
  /** A view of `buf`, for layouts written field by field. */
  readonly view: DataView;
  /** Bytes written so far, always 4-byte aligned between messages. */
  length = 0;
  private msgStart = -1;
  private attrStart = -1;

  constructor(buf: Buffer) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
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
    const v = this.view;
    const o = this.length;
    this.msgStart = o;
    // DataView stores: TurboFan inlines them, where Buffer's write methods check their arguments.
    v.setUint32(o, 0, true);
    v.setUint16(o + 4, type, true);
    v.setUint16(o + 6, flags, true);
    v.setUint32(o + 8, seq >>> 0, true);
    v.setUint32(o + 12, 0, true);
    this.length = o + NLMSG_HDRLEN;
    return this;
  }

  /** Reserve `n` zeroed bytes and return their offset, for a struct encoder to fill in place. */
  reserve(n: number): number {
    this.ensure(n);
    const o = this.length;
    if ((n & 3) === 0) for (let i = o; i < o + n; i += 4) this.view.setUint32(i, 0);
    else zero(this.buf, o, o + n);
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
    if (this.msgStart < 0) throw new MisuseError("MessageWriter.end() without begin()");
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
      throw new MisuseError(
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

/**
 * AttributeReader walks a run of netlink attributes (struct nlattr / struct rtattr: u16 len,
 * u16 type, payload, padded to 4 bytes) inside a buffer, without allocating. Typed getters check
 * the payload length; the first problem sticks in `error` and ends the walk, so a caller checks
 * once at the end instead of after every read (as mdlayher/netlink's AttributeDecoder does).
 */

/**
 * Copy src[start, end) to dst at `at`, byte by byte: Buffer#copy of a part of a buffer allocates a
 * view per call on Node 20, which costs more than the copy for the few hundred bytes of a message.
 */
export function copyBytes(src: Buffer, start: number, end: number, dst: Buffer, at: number): void {
  for (let i = start; i < end; i++) dst[at + i - start] = src[i]!;
}

export class AttributeReader {
  buf: Buffer = NO_BYTES;
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
    const pos = this.pos;
    const end = this.end;
    if (pos >= end || this.error !== undefined) return false;
    if (end - pos < NLA_HDRLEN) return this.fail(pos, `${end - pos} trailing bytes`);
    // nla_len and nla_type (host order, little-endian here), byte by byte: this runs for every attribute.
    const b = this.buf;
    const len = b[pos]! | (b[pos + 1]! << 8);
    if (len < NLA_HDRLEN || pos + len > end) {
      return this.fail(pos, `attribute length ${len} does not fit in ${end - pos} bytes`);
    }
    this.type = (b[pos + 2]! | (b[pos + 3]! << 8)) & 0x3fff;
    this.offset = pos + NLA_HDRLEN;
    this.length = len - NLA_HDRLEN;
    this.pos = pos + align4(len);
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

/**
 * DecodeScratch: the state decoders reuse from one message to the next — an attribute reader
 * (and one for the nests inside what it walks), a DataView of the buffer being decoded (consecutive messages of one receive chunk share it), and
 * the cgroup ids read lately (the sockets of one dump mostly share a few). One
 * belongs to each stream of messages, owned by whoever reads it, so no decoder keeps state of its own.
 */

const CGROUP_SLOT_BITS = 3;
const CGROUP_SLOTS = 1 << CGROUP_SLOT_BITS;
const GOLDEN = 0x9e3779b1 | 0;

export class DecodeScratch {
  readonly attrs = new AttributeReader();
  readonly nested = new AttributeReader();
  #viewed: Buffer | undefined;
  #view: DataView | undefined;

  /** A DataView over `buf`, the same one as long as `buf` is. */
  view(buf: Buffer): DataView {
    if (buf !== this.#viewed || !this.#view) {
      this.#viewed = buf;
      this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.#view;
  }

  // The cgroup ids met lately, in a small table indexed by a hash of their words.
  readonly #cgroupWords = new Int32Array(2 * CGROUP_SLOTS);
  readonly #cgroupIds = new Array<bigint | undefined>(CGROUP_SLOTS).fill(undefined);

  /** The host-order u64 at `view[at]` as a bigint: the same bigint as before when the bytes are. */
  cgroupId(view: DataView, at: number): bigint {
    const lo = view.getInt32(at, true);
    const hi = view.getInt32(at + 4, true);
    const slot = Math.imul(lo ^ Math.imul(hi, GOLDEN), GOLDEN) >>> (32 - CGROUP_SLOT_BITS);
    const words = this.#cgroupWords;
    const known = this.#cgroupIds[slot];
    if (known !== undefined && words[2 * slot] === lo && words[2 * slot + 1] === hi) return known;
    const id = view.getBigUint64(at, true);
    words[2 * slot] = lo;
    words[2 * slot + 1] = hi;
    this.#cgroupIds[slot] = id;
    return id;
  }
}
