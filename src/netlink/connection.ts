/**
 * The netlink connection: the interface every request above this layer goes through (dumps,
 * batches, any netlink protocol), and NetlinkSocket, the real one — a socket of one protocol with a
 * reused receive buffer, a receive timeout so no call can hang, and the checks every answer must
 * pass (sender is the kernel, nothing truncated). A netlink socket belongs for life to the network
 * namespace of the thread that created it; netns/ opens sockets inside other namespaces by calling
 * `open` there. Tests put a fake behind the interface.
 */

import { Errno, MisuseError, SysError } from "../sys/errors.js";
import {
  AF_NETLINK,
  bind,
  close,
  getsockoptInt,
  interfaceName,
  MSG_TRUNC,
  readable,
  recvfrom,
  SO_RCVBUF,
  SO_RCVBUFFORCE,
  SO_RCVTIMEO,
  SO_SNDBUF,
  SOCK_RAW,
  SOL_SOCKET,
  sendto,
  setsockopt,
  setsockoptInt,
  socket,
  writeInBackground,
} from "../sys/index.js";
import { NetlinkProtocolError, NetlinkTimeoutError } from "./errors.js";
import { NETLINK_CAP_ACK, SOL_NETLINK } from "./message.js";

/**
 * NetlinkConnection is what a request needs from a netlink socket: sequence numbers, a write, and
 * receives into one reused buffer. The owner closes it.
 */
export interface NetlinkConnection extends Disposable {
  /** The reused receive buffer: each receive overwrites it from byte 0. */
  readonly recvBuf: Buffer;
  /** How many bytes of answers can wait to be read before the kernel drops them (ENOBUFS). */
  readonly receiveQueueBytes: number;
  /** The next request sequence number. */
  nextSeq(): number;
  /** Send bytes [0, len) of `buf` (one or more complete messages) in one write. */
  send(buf: Buffer, len: number): void;
  /**
   * send(), done on another thread while this one goes on (a dump's first walk of its table
   * happens inside the write); `buf` must stay as it is until the answer is read. A write that
   * fails leaves nothing to receive: the next receive times out. Absent where there is no thread
   * to do it (a fake connection).
   */
  sendInBackground?(buf: Buffer, len: number): void;
  /**
   * Receive one datagram into recvBuf and return its length. Throws NetlinkTimeoutError when
   * nothing arrives in time, NetlinkProtocolError for a datagram that did not fit, SysError
   * otherwise (ENOBUFS: answers were dropped).
   */
  receive(op: string): number;
  /** Close the connection. Idempotent. */
  close(): void;
  /**
   * The name of interface `ifindex` in the connection's network namespace, undefined when there is
   * none (a fake connection may have no namespace to ask).
   */
  interfaceName?(ifindex: number): string | undefined;
}

/** Options for NetlinkSocket.open. */
export interface NetlinkOptions {
  /** Give up on an answer after this long (SO_RCVTIMEO). Default 5000 ms. */
  receiveTimeoutMs?: number;
  /** Kernel receive queue size (SO_RCVBUF, forced when privileged). Default 4 MiB: room for batched acks. */
  receiveQueueBytes?: number;
  /** Size of the reused receive buffer. Default 64 KiB: dump chunks are at most 32 KiB. */
  receiveBufferBytes?: number;
}

/**
 * Receive buffers of closed sockets, for the next sockets to open: a walk over many namespaces
 * opens and closes a socket or two in each, and a buffer whose pages are already mapped saves the
 * page faults of a fresh one (the costliest part of a small dump on some machines).
 */
const spareBuffers: Buffer[] = [];
/** Spare buffers kept, at most: as many sockets as a namespace's visit has open at once. */
const MAX_SPARE_BUFFERS = 4;

function receiveBuffer(bytes: number): Buffer {
  const at = spareBuffers.findIndex((b) => b.length === bytes);
  if (at < 0) return Buffer.allocUnsafe(bytes);
  return spareBuffers.splice(at, 1)[0]!;
}

// struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
const SOCKADDR_NL_LEN = 12;

/** The kernel's address (nl_pid 0), which every write goes to: read by sendto, never written. */
const KERNEL_ADDRESS = Buffer.alloc(SOCKADDR_NL_LEN);
KERNEL_ADDRESS.writeUInt16LE(AF_NETLINK, 0);
/** Where a receive puts its sender's address, read at once (receives are synchronous). */
const FROM = Buffer.alloc(SOCKADDR_NL_LEN);

/**
 * The longest write every netlink socket takes as it was opened: the kernel refuses a write longer
 * than its send buffer less 32 bytes (EMSGSIZE, netlink_sendmsg), which starts at
 * net.core.wmem_default, never below SOCK_MIN_SNDBUF (4,608 bytes). Only a longer write (a batch of
 * more than ~50 destroys, a dump with a long filter program) makes the socket raise it first.
 */
const WRITE_BYTES_ANY_BUFFER = 4096;
/** The send buffer asked for before a longer write (SO_SNDBUF: capped by net.core.wmem_max). */
const SEND_BUFFER_BYTES = 1024 * 1024;

/** struct timeval { time_t tv_sec; suseconds_t tv_usec; } of each receive timeout used, made once. */
const timevals = new Map<number, Buffer>();

function timeval(ms: number): Buffer {
  let tv = timevals.get(ms);
  if (!tv) {
    tv = Buffer.alloc(16);
    tv.writeBigInt64LE(BigInt(Math.floor(ms / 1000)), 0);
    tv.writeBigInt64LE(BigInt((ms % 1000) * 1000), 8);
    timevals.set(ms, tv);
  }
  return tv;
}

/**
 * NetlinkSocket is one open netlink socket with its reused receive buffer. Open it with
 * NetlinkSocket.open (or netns openNetlinkIn for another namespace); the caller owns it and closes
 * it (or declares it with `using`).
 */
export class NetlinkSocket implements NetlinkConnection {
  /** The socket's file descriptor; owned by this object. */
  readonly fd: number;
  /** The reused receive buffer: message views handed out are valid until the next receive. */
  readonly recvBuf: Buffer;
  readonly timeoutMs: number;
  /** The receive queue the kernel granted (SO_RCVBUF): how many answers can wait to be read. */
  receiveQueueBytes = 0;
  private seq: number;
  /** Whether the send buffer was raised for writes longer than WRITE_BYTES_ANY_BUFFER. */
  private sendBufferRaised = false;
  private closed = false;
  /** A write sent in the background whose answer has not arrived. */
  private inBackground = false;
  /** Whether any write went in the background (see receive: the kernel's spurious EINVAL). */
  private wroteInBackground = false;

  private constructor(fd: number, options: NetlinkOptions) {
    this.fd = fd;
    this.timeoutMs = options.receiveTimeoutMs ?? 5000;
    this.recvBuf = receiveBuffer(options.receiveBufferBytes ?? 64 * 1024);
    // Start at a random sequence number so answers meant for an earlier socket are never mistaken for ours.
    this.seq = (Math.random() * 0x7fffffff) >>> 0;
  }

  /**
   * Open a netlink socket of `protocol` (e.g. NETLINK_SOCK_DIAG = 4) in the calling thread's network
   * namespace. The caller owns it and must close it. Throws SysError.
   */
  static open(protocol: number, options: NetlinkOptions = {}): NetlinkSocket {
    const fd = socket(AF_NETLINK, SOCK_RAW, protocol);
    try {
      const conn = new NetlinkSocket(fd, options);
      conn.configure(options.receiveQueueBytes ?? 4 * 1024 * 1024);
      return conn;
    } catch (err) {
      close(fd);
      throw err;
    }
  }

  /**
   * The options every use needs: a receive queue that holds a batch's answers, short failure
   * answers (NETLINK_CAP_ACK), a receive timeout. The send buffer is left as it is until a write
   * needs more (roomFor).
   */
  private configure(queueBytes: number): void {
    try {
      setsockoptInt(this.fd, SOL_SOCKET, SO_RCVBUFFORCE, queueBytes);
      // Granted as asked, or more: the kernel sets twice the size for its bookkeeping, never less
      // than SOCK_MIN_RCVBUF (sk_setsockopt): nothing to ask back.
      this.receiveQueueBytes = queueBytes;
    } catch (err) {
      // Without CAP_NET_ADMIN the kernel caps SO_RCVBUF at net.core.rmem_max; that is still usable.
      if (!(err instanceof SysError) || err.errno !== Errno.EPERM) throw err;
      setsockoptInt(this.fd, SOL_SOCKET, SO_RCVBUF, queueBytes);
      // The kernel doubles what it was asked for (socket(7)), and caps the unforced request.
      this.receiveQueueBytes = getsockoptInt(this.fd, SOL_SOCKET, SO_RCVBUF) >> 1;
    }
    setsockoptInt(this.fd, SOL_NETLINK, NETLINK_CAP_ACK, 1);
    setsockopt(this.fd, SOL_SOCKET, SO_RCVTIMEO, timeval(this.timeoutMs));
  }

  /** Raise the send buffer, once, before a write longer than any socket takes as opened. */
  private roomFor(len: number): void {
    if (len <= WRITE_BYTES_ANY_BUFFER || this.sendBufferRaised) return;
    setsockoptInt(this.fd, SOL_SOCKET, SO_SNDBUF, SEND_BUFFER_BYTES);
    this.sendBufferRaised = true;
  }

  interfaceName(ifindex: number): string | undefined {
    this.assertOpen();
    return interfaceName(this.fd, ifindex);
  }

  /**
   * Join multicast groups 1..32 (their messages arrive with receive()) by binding with their mask
   * in sockaddr_nl.nl_groups. Binding also gives the socket a port id: the kernel never delivers
   * its broadcasts to a socket whose port id is 0, its own.
   */
  subscribe(groups: readonly number[]): void {
    this.assertOpen();
    const addr = Buffer.alloc(SOCKADDR_NL_LEN);
    addr.writeUInt16LE(AF_NETLINK, 0);
    let mask = 0;
    for (const g of groups) mask |= 1 << (g - 1);
    addr.writeUInt32LE(mask >>> 0, 8);
    bind(this.fd, addr);
  }

  /** The next request sequence number. */
  nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  /** Send bytes [0, len) of `buf` (one or more complete messages) to the kernel in one write. */
  send(buf: Buffer, len: number): void {
    this.assertOpen();
    this.roomFor(len);
    const sent = sendto(this.fd, buf, len, 0, KERNEL_ADDRESS);
    if (sent !== len) throw new NetlinkProtocolError(`short netlink write: ${sent} of ${len} bytes`);
  }

  sendInBackground(buf: Buffer, len: number): void {
    this.assertOpen();
    this.roomFor(len);
    this.inBackground = true;
    this.wroteInBackground = true;
    // A failed write leaves nothing to receive: the receive that waits for its answer times out.
    writeInBackground(this.fd, buf, len);
  }

  /**
   * Receive one datagram into recvBuf and return its length. Throws NetlinkTimeoutError when
   * nothing arrives in time, NetlinkProtocolError when the datagram did not fit (data would be lost)
   * or did not come from the kernel, SysError otherwise (e.g. ENOBUFS: the kernel dropped answers).
   */
  receive(op: string): number {
    this.assertOpen();
    let spurious = false;
    for (;;) {
      let n: number;
      try {
        n = recvfrom(this.fd, this.recvBuf, MSG_TRUNC, FROM);
      } catch (err) {
        if (err instanceof SysError && err.errno === Errno.EAGAIN)
          throw new NetlinkTimeoutError(op, this.timeoutMs);
        // A dump whose last part the background write is still producing: a receive that takes
        // that part sees the dump running and goes on with it, finds it over once it gets the
        // dump's lock, and leaves EINVAL as the socket's error (netlink_recvmsg, netlink_dump),
        // which the next receive returns, and clears, with nothing lost. Read again, once.
        if (err instanceof SysError && err.errno === Errno.EINVAL && this.wroteInBackground && !spurious) {
          spurious = true;
          continue;
        }
        throw err;
      }
      if (n > this.recvBuf.length) {
        throw new NetlinkProtocolError(`${op}: ${n}-byte answer truncated to ${this.recvBuf.length} bytes`);
      }
      // nl_pid 0 is the kernel; anything else is another process talking to us: drop it.
      if (FROM.readUInt32LE(4) !== 0) continue;
      // An answer means a write sent in the background has reached the kernel.
      this.inBackground = false;
      return n;
    }
  }

  /**
   * Close the socket. Idempotent. Views of the receive buffer are invalid from here on: the buffer
   * goes to the next socket opened.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    // A write on another thread that has not reached the kernel yet would find the descriptor's
    // number given to the next socket opened: its answer is awaited first (up to the timeout).
    if (this.inBackground) readable([this.fd], this.timeoutMs);
    close(this.fd);
    if (spareBuffers.length < MAX_SPARE_BUFFERS) spareBuffers.push(this.recvBuf);
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new MisuseError("netlink socket used after close()");
  }
}
