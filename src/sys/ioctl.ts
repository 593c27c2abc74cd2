/**
 * ioctl(2), for the few requests sockdiag makes: nsfs's NS_GET_NSTYPE, which tells what kind of
 * namespace a descriptor is, SIOCGIFNAME, the name of an interface in a socket's namespace, and
 * isatty(3)'s TCGETS, whether a descriptor is a terminal.
 */
import { Errno, SysError } from "./errors.js";
import { errno, native } from "./libc.js";

/** linux/nsfs.h: #define NSIO 0xb7; #define NS_GET_NSTYPE _IO(NSIO, 0x3) — answers the CLONE_NEW* flag. */
export const NS_GET_NSTYPE = 0xb703;

/** ioctl(2) with an integer argument (0 when the request reads none); returns the call's non-negative result. */
export function ioctlInt(fd: number, request: number, arg = 0): number {
  const n = native.ioctl(fd, request, arg);
  if (n < 0) throw new SysError("ioctl", errno(), `${fd}, 0x${request.toString(16)}`);
  return n;
}

/** linux/sockios.h: #define SIOCGIFNAME 0x8910 — the name of the interface whose index is in the ifreq. */
const SIOCGIFNAME = 0x8910;
/** sizeof(struct ifreq): char ifr_name[IFNAMSIZ = 16], then a 24-byte union (ifr_ifindex first). */
const IFREQ_LEN = 40;
const ifreq = Buffer.alloc(IFREQ_LEN);

/**
 * The name of interface `ifindex` in the network namespace of the socket `fd` (the socket's, not
 * the calling thread's: the kernel answers SIOCGIFNAME from sock_net), or undefined when the
 * namespace has no such interface (ENODEV).
 */
export function interfaceName(fd: number, ifindex: number): string | undefined {
  ifreq.fill(0);
  ifreq.writeInt32LE(ifindex | 0, 16);
  if (native.ioctlBuffer(fd, SIOCGIFNAME, ifreq) < 0) {
    const e = errno();
    if (e === Errno.ENODEV) return undefined;
    throw new SysError("ioctl", e, `${fd}, SIOCGIFNAME ${ifindex}`);
  }
  const nul = ifreq.indexOf(0);
  return ifreq.toString("latin1", 0, nul >= 0 && nul < 16 ? nul : 16);
}

/**
 * Whether `fd` is a terminal: isatty(3), the test libuv makes for process.stderr.isTTY, without
 * building that stream (its first read loads node:net and node:stream, ~5 ms of a CLI's start).
 */
export function isTerminal(fd: number): boolean {
  return native.isatty(fd) === 1;
}
