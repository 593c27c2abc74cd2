/**
 * ioctl(2), for the few requests that take an integer or nothing (no pointer): today only nsfs's
 * NS_GET_NSTYPE, which tells what kind of namespace a descriptor is.
 */
import { SysError } from "./errors.js";
import { errno, native } from "./libc.js";

/** linux/nsfs.h: #define NSIO 0xb7; #define NS_GET_NSTYPE _IO(NSIO, 0x3) — answers the CLONE_NEW* flag. */
export const NS_GET_NSTYPE = 0xb703;

/** ioctl(2) with an integer argument (0 when the request reads none); returns the call's non-negative result. */
export function ioctlInt(fd: number, request: number, arg = 0): number {
  const n = native.ioctl(fd, request, arg);
  if (n < 0) throw new SysError("ioctl", errno(), `${fd}, 0x${request.toString(16)}`);
  return n;
}
