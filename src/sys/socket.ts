/**
 * Socket system calls. Each wrapper returns a plain number or fills a caller's Buffer, and throws
 * SysError on failure. Calls interrupted by a signal (EINTR) are retried.
 */

import { write } from "node:fs";
import { Errno, SysError } from "./errors.js";
import { errno, native } from "./libc.js";

// Address families (linux/socket.h) and IP protocol numbers (linux/in.h, in6.h): the one
// definition every layer above uses, for socket(2) and in the netlink layouts that carry them.
export const AF_UNSPEC = 0;
export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_PACKET = 17;
export const AF_TIPC = 30;
export const AF_VSOCK = 40;
export const AF_XDP = 44;
export const IPPROTO_ICMP = 1;
export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_DCCP = 33;
export const IPPROTO_GRE = 47;
export const IPPROTO_ICMPV6 = 58;
export const IPPROTO_SCTP = 132;
export const IPPROTO_UDPLITE = 136;
export const IPPROTO_RAW = 255;
export const IPPROTO_MPTCP = 262;
export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;
export const SOCK_SEQPACKET = 5;
export const SOCK_NONBLOCK = 0o4000;
export const SOCK_CLOEXEC = 0o2000000;
export const SOL_SOCKET = 1;
export const SO_SNDBUF = 7;
export const SO_RCVBUF = 8;
export const SO_RCVTIMEO = 20;
export const SO_SNDBUFFORCE = 32;
export const SO_RCVBUFFORCE = 33;
export const SO_COOKIE = 57;
export const MSG_PEEK = 0x2;
export const MSG_TRUNC = 0x20;
export const MSG_DONTWAIT = 0x40;

function check(syscall: string, result: number | bigint, detail?: string): number {
  const n = Number(result);
  if (n < 0) throw new SysError(syscall, errno(), detail);
  return n;
}

function retrying(syscall: string, call: () => number | bigint): number {
  for (;;) {
    const n = Number(call());
    if (n >= 0) return n;
    const e = errno();
    if (e !== Errno.EINTR) throw new SysError(syscall, e);
  }
}

/** socket(2); the caller owns the returned descriptor and must close it. SOCK_CLOEXEC is always added. */
export function socket(domain: number, type: number, protocol: number): number {
  return check(
    "socket",
    native.socket(domain, type | SOCK_CLOEXEC, protocol),
    `${domain}, ${type}, ${protocol}`,
  );
}

/** socketpair(2); returns both descriptors, owned by the caller. */
export function socketpair(domain: number, type: number, protocol = 0): [number, number] {
  const sv = [0, 0];
  check("socketpair", native.socketpair(domain, type | SOCK_CLOEXEC, protocol, sv));
  return [sv[0] as number, sv[1] as number];
}

/** bind(2) to a sockaddr already encoded in `addr`. */
export function bind(fd: number, addr: Buffer): void {
  check("bind", native.bind(fd, addr, addr.length));
}

/** connect(2) to a sockaddr already encoded in `addr`. */
export function connect(fd: number, addr: Buffer): void {
  retrying("connect", () => native.connect(fd, addr, addr.length));
}

/** listen(2). */
export function listen(fd: number, backlog: number): void {
  check("listen", native.listen(fd, backlog));
}

/** accept4(2) without the peer address; the caller owns the new descriptor. */
export function accept(fd: number): number {
  return retrying("accept4", () => native.accept4(fd, null, null, SOCK_CLOEXEC));
}

/** getsockname(2) into `addr`; returns the address length the kernel reported. */
export function getsockname(fd: number, addr: Buffer): number {
  const len = [addr.length];
  check("getsockname", native.getsockname(fd, addr, len));
  return len[0] as number;
}

/** sendto(2) of `len` bytes of `buf`; `addr` null for a connected socket. Returns bytes sent. */
export function sendto(fd: number, buf: Buffer, len: number, flags: number, addr: Buffer | null): number {
  return retrying("sendto", () => native.sendto(fd, buf, len, flags, addr, addr ? addr.length : 0));
}

/**
 * write(2) of bytes [0, len) of `buf` on a thread of libuv's pool, returning at once: for a request
 * whose work the kernel does inside the call (a netlink dump walks its table there), so that the
 * calling thread can go on meanwhile. On a netlink socket never connected, a write goes to the
 * kernel, as sendto(2) to its address does. `buf` must not change until the answer is read (Node
 * keeps it referenced until the write is over). Its result reaches no one (a synchronous caller
 * never lets the event loop run to hear it): a failed write shows as an answer that does not come.
 *
 * Node's fs.write rather than the FFI's asynchronous call: koffi frees an asynchronous call's
 * memory (256 KiB) only when the event loop runs its completion, and refuses a 257th before that,
 * which a synchronous caller over a few hundred namespaces reaches.
 */
export function writeInBackground(fd: number, buf: Buffer, len: number): void {
  write(fd, buf, 0, len, null, ignoreResult);
}

const ignoreResult = () => {};

/**
 * recvfrom(2) into `buf`, with the sender's address written into `addr`. Returns the datagram
 * length, which exceeds `buf.length` when MSG_TRUNC was passed and the datagram did not fit.
 */
export function recvfrom(fd: number, buf: Buffer, flags: number, addr: Buffer): number {
  const alen = [addr.length];
  return retrying("recvfrom", () => native.recvfrom(fd, buf, buf.length, flags, addr, alen));
}

/**
 * recv(2) that returns the negated errno instead of throwing: test helpers probe sockets for
 * ECONNABORTED and EAGAIN many times a second, where an exception per call would be the cost.
 */
export function recvErrno(fd: number, buf: Buffer, flags: number): number {
  const n = Number(native.recv(fd, buf, buf.length, flags));
  return n < 0 ? -errno() : n;
}

/** An int option's value on its way in or out: the calls are synchronous, one buffer serves them all. */
const intOption = Buffer.alloc(4);

/** setsockopt(2) with an int value. */
export function setsockoptInt(fd: number, level: number, name: number, value: number): void {
  intOption.writeInt32LE(value);
  check("setsockopt", native.setsockopt(fd, level, name, intOption, 4), `${level}, ${name}`);
}

/** setsockopt(2) with raw bytes. */
export function setsockopt(fd: number, level: number, name: number, value: Buffer): void {
  check("setsockopt", native.setsockopt(fd, level, name, value, value.length), `${level}, ${name}`);
}

/** getsockopt(2) into `out`; returns the length the kernel wrote. */
export function getsockopt(fd: number, level: number, name: number, out: Buffer): number {
  const len = [out.length];
  check("getsockopt", native.getsockopt(fd, level, name, out, len), `${level}, ${name}`);
  return len[0] as number;
}

/** getsockopt(2) of an int option. */
export function getsockoptInt(fd: number, level: number, name: number): number {
  getsockopt(fd, level, name, intOption);
  return intOption.readInt32LE();
}

/** The socket's cookie (SO_COOKIE), as the kernel reports it in inet_diag_sockid. */
export function socketCookie(fd: number): bigint {
  const out = Buffer.alloc(8);
  getsockopt(fd, SOL_SOCKET, SO_COOKIE, out);
  return out.readBigUInt64LE();
}

/** shutdown(2). */
export function shutdown(fd: number, how: number): void {
  check("shutdown", native.shutdown(fd, how));
}

const POLLIN = 0x1;
/** sizeof(struct pollfd): int fd; short events; short revents. */
const POLLFD_LEN = 8;

/**
 * Which of `fds` have data to read, waiting up to `timeoutMs` (poll(2) for POLLIN; 0: do not wait).
 * An interrupted wait (EINTR) answers "none yet".
 */
export function readable(fds: readonly number[], timeoutMs: number): boolean[] {
  const buf = Buffer.alloc(fds.length * POLLFD_LEN);
  fds.forEach((fd, i) => {
    buf.writeInt32LE(fd, i * POLLFD_LEN);
    buf.writeInt16LE(POLLIN, i * POLLFD_LEN + 4);
  });
  const n = Number(native.poll(buf, fds.length, timeoutMs));
  if (n < 0) {
    if (errno() === Errno.EINTR) return fds.map(() => false);
    throw new SysError("poll", errno());
  }
  return fds.map((_, i) => buf.readInt16LE(i * POLLFD_LEN + 6) !== 0);
}

/** close(2). EINTR is not retried: on Linux the descriptor is released even then. */
export function close(fd: number): void {
  const n = Number(native.close(fd));
  if (n < 0 && errno() !== Errno.EINTR) throw new SysError("close", errno());
}

/**
 * if_nametoindex(3) in the calling thread's network namespace; returns 0 when no interface has the
 * name (errno ENODEV), like the C function.
 */
export function ifNameToIndex(name: string): number {
  return native.if_nametoindex(name);
}
