/**
 * FakeNetlink: a NetlinkConnection for unit tests of the logic above the netlink layer (dumps,
 * batches, destroy bookkeeping) without root and without a kernel. A responder function answers
 * each message sent; a delivery hook may drop, reorder or add answers, or put an error (ENOBUFS) in
 * their place; answers reach the reader in datagrams of a chosen size, so a reply split across
 * receives is the common case. An empty queue is a receive timeout, at once. Answers are built
 * with the independent test builder (test/diag/layout.ts), never with production writers.
 */
import type { NetlinkConnection } from "../../src/netlink/index.js";
import { NetlinkProtocolError, NetlinkTimeoutError } from "../../src/netlink/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { NLMSGHDR, nlmsg, pack, pad4, unpack } from "../diag/layout.js";

const NLM_F_MULTI = 0x2;
const NLM_F_ACK = 0x4;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;

/** One message the code under test sent, split into its header fields and payload. */
export interface SentMessage {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  payload: Buffer;
  /** The whole message, header included, as sent (unpadded). */
  bytes: Buffer;
}

/** What a receive gets: a message (part of a datagram), or an error the receive throws. */
export type Delivery = Buffer | Error;

/** Answers one sent message with the messages the kernel would send back (none: no answer). */
export type Responder = (message: SentMessage, fake: FakeNetlink) => readonly Delivery[] | undefined;

export interface FakeNetlinkOptions {
  /** Answers each message sent. Default: errors-only, like the kernel for requests that succeed. */
  respond?: Responder;
  /** Rewrites the answers to one write before they are queued: drop, reorder, add, inject errors. */
  deliver?: (answers: Delivery[], write: readonly SentMessage[]) => Delivery[];
  /** The most messages one receive returns. Default 2, so every longer answer spans receives. */
  messagesPerReceive?: number;
  /** Size of recvBuf. Default 64 KiB. */
  receiveBufferBytes?: number;
  /** What receiveQueueBytes reports. Default 4 MiB. */
  receiveQueueBytes?: number;
  /** The sequence number before the first nextSeq(). Default 1000. */
  firstSeq?: number;
  /** What interfaceName answers, by index (an index not here has no name). */
  interfaceNames?: Readonly<Record<number, string>>;
}

export class FakeNetlink implements NetlinkConnection {
  readonly recvBuf: Buffer;
  readonly receiveQueueBytes: number;
  /** Every message sent, in order. */
  readonly sent: SentMessage[] = [];
  /** The bytes of every write, in order. */
  readonly writes: Buffer[] = [];
  /** How many receive calls were made (timeouts and errors included). */
  receives = 0;
  closed = false;
  private readonly queue: Delivery[][] = [];
  private seq: number;
  private readonly perReceive: number;

  constructor(private readonly options: FakeNetlinkOptions = {}) {
    this.recvBuf = Buffer.alloc(options.receiveBufferBytes ?? 64 * 1024);
    this.receiveQueueBytes = options.receiveQueueBytes ?? 4 * 1024 * 1024;
    this.seq = options.firstSeq ?? 1000;
    this.perReceive = options.messagesPerReceive ?? 2;
  }

  nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  send(buf: Buffer, len: number): void {
    this.assertOpen();
    const bytes = Buffer.from(buf.subarray(0, len));
    this.writes.push(bytes);
    const write = splitMessages(bytes);
    this.sent.push(...write);
    const respond = this.options.respond ?? errorsOnly(() => 0);
    let answers: Delivery[] = write.flatMap((m) => [...(respond(m, this) ?? [])]);
    if (this.options.deliver) answers = this.options.deliver(answers, write);
    this.enqueue(answers);
  }

  /** Queue deliveries as if the kernel had sent them (stray answers, late errors). */
  enqueue(deliveries: readonly Delivery[]): void {
    let datagram: Buffer[] = [];
    const flush = () => {
      if (datagram.length > 0) this.queue.push(datagram);
      datagram = [];
    };
    for (const d of deliveries) {
      if (d instanceof Error) {
        flush();
        this.queue.push([d]);
        continue;
      }
      datagram.push(d);
      if (datagram.length >= this.perReceive) flush();
    }
    flush();
  }

  /** How many receives' worth of deliveries are still queued. */
  get pending(): number {
    return this.queue.length;
  }

  receive(op: string): number {
    this.assertOpen();
    this.receives++;
    const next = this.queue.shift();
    if (!next) throw new NetlinkTimeoutError(op, 0);
    const [first] = next;
    if (first instanceof Error) throw first;
    let n = 0;
    for (const m of next as Buffer[]) {
      if (n + m.length > this.recvBuf.length) {
        throw new NetlinkProtocolError(`${op}: answer truncated to ${this.recvBuf.length} bytes`);
      }
      m.copy(this.recvBuf, n);
      n += m.length;
    }
    return n;
  }

  /** The names asked for, in order (the code under test should ask once per interface). */
  readonly namesAsked: number[] = [];

  interfaceName(ifindex: number): string | undefined {
    this.namesAsked.push(ifindex);
    return this.options.interfaceNames?.[ifindex];
  }

  close(): void {
    this.closed = true;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new NetlinkProtocolError("fake netlink connection used after close()");
  }
}

/** The messages in one write, each checked to fit. */
export function splitMessages(bytes: Buffer): SentMessage[] {
  const out: SentMessage[] = [];
  for (let o = 0; o < bytes.length; ) {
    const h = unpack(NLMSGHDR, bytes, o);
    const len = Number(h.nlmsg_len);
    if (len < 16 || o + len > bytes.length) throw new Error(`bad message at byte ${o} of a write`);
    out.push({
      type: Number(h.nlmsg_type),
      flags: Number(h.nlmsg_flags),
      seq: Number(h.nlmsg_seq),
      pid: Number(h.nlmsg_pid),
      payload: Buffer.from(bytes.subarray(o + 16, o + len)),
      bytes: Buffer.from(bytes.subarray(o, o + len)),
    });
    o += pad4(len);
  }
  return out;
}

/**
 * The NLMSG_ERROR answer to `to`: struct nlmsgerr { int error (-errno; 0 is an ack); the request's
 * nlmsghdr } — what the kernel sends with NETLINK_CAP_ACK set.
 */
export function errorAnswer(to: SentMessage, errno: number): Buffer {
  const error = Buffer.alloc(4);
  error.writeInt32LE(-errno);
  return nlmsg({ type: NLMSG_ERROR, flags: 0x100, seq: to.seq }, error, to.bytes.subarray(0, 16));
}

/** NLMSG_DONE ending the dump `to`, with its int status (0, or -errno). */
export function doneAnswer(to: SentMessage, status = 0): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(status);
  return nlmsg({ type: NLMSG_DONE, flags: NLM_F_MULTI, seq: to.seq }, b);
}

/** One part of a multipart answer to `to`: message `type` carrying `payload`. */
export function partAnswer(to: SentMessage, type: number, payload: Buffer): Buffer {
  return nlmsg({ type, flags: NLM_F_MULTI, seq: to.seq }, payload);
}

/**
 * A responder as the kernel behaves (net/netlink/af_netlink.c netlink_rcv_skb): a message that
 * fails is answered with its error; one that succeeds is acked only if it asked (NLM_F_ACK).
 */
export function errorsOnly(errnoOf: (m: SentMessage) => number): Responder {
  return (m) => {
    const errno = errnoOf(m);
    if (errno !== 0 || m.flags & NLM_F_ACK) return [errorAnswer(m, errno)];
    return [];
  };
}

/** The receive error the kernel reports when it dropped answers: the queue overflowed. */
export function enobufs(): SysError {
  return new SysError("recvfrom", Errno.ENOBUFS);
}

/** A message with an unrelated sequence number, as a leftover of an earlier request would be. */
export function strayAnswer(seq: number, errno = 0): Buffer {
  const error = Buffer.alloc(4);
  error.writeInt32LE(-errno);
  return nlmsg(
    { type: NLMSG_ERROR, flags: 0x100, seq },
    error,
    pack(NLMSGHDR, { nlmsg_len: 16, nlmsg_seq: seq }),
  );
}

/**
 * A real connection that counts its receives and records what it sent, for tests that check how
 * many receives a request took or which requests were sent.
 */
export class CountingConnection implements NetlinkConnection {
  receives = 0;
  /** Every message sent, in order. */
  readonly sent: SentMessage[] = [];

  constructor(private readonly inner: NetlinkConnection) {}

  /** Send bytes to the real connection without recording them (a subclass recorded them). */
  protected sendThrough(bytes: Buffer): void {
    this.inner.send(bytes, bytes.length);
  }

  get recvBuf(): Buffer {
    return this.inner.recvBuf;
  }
  get receiveQueueBytes(): number {
    return this.inner.receiveQueueBytes;
  }
  nextSeq(): number {
    return this.inner.nextSeq();
  }
  send(buf: Buffer, len: number): void {
    this.sent.push(...splitMessages(Buffer.from(buf.subarray(0, len))));
    this.inner.send(buf, len);
  }
  receive(op: string): number {
    this.receives++;
    return this.inner.receive(op);
  }
  close(): void {
    this.inner.close();
  }
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * A real connection whose kernel refuses some requests: each message `refuse` gives an errno is
 * not sent; its NLMSG_ERROR answer (as the kernel would build it) is received before the kernel's
 * answers to the rest of that write. For faults a real kernel will not produce on demand (EPERM or
 * EOPNOTSUPP to SOCK_DESTROY as root on a kernel that has it).
 */
export class RefusingConnection extends CountingConnection {
  private readonly refusals: Buffer[] = [];

  constructor(
    inner: NetlinkConnection,
    private readonly refuse: (m: SentMessage) => number,
  ) {
    super(inner);
  }

  override send(buf: Buffer, len: number): void {
    const write = splitMessages(Buffer.from(buf.subarray(0, len)));
    const kept: Buffer[] = [];
    for (const m of write) {
      const errno = this.refuse(m);
      if (errno === 0) kept.push(m.bytes, Buffer.alloc(pad4(m.bytes.length) - m.bytes.length));
      else this.refusals.push(errorAnswer(m, errno));
    }
    this.sent.push(...write);
    const rest = Buffer.concat(kept);
    if (rest.length > 0) super.sendThrough(rest);
  }

  override receive(op: string): number {
    const refusal = this.refusals.shift();
    if (!refusal) return super.receive(op);
    this.receives++;
    refusal.copy(this.recvBuf);
    return refusal.length;
  }
}
