/** fcntl(2), for the one request sockdiag makes: a second descriptor of an open file. */
import { SysError } from "./errors.js";
import { errno, native } from "./libc.js";

/** F_DUPFD_CLOEXEC from fcntl.h. */
const F_DUPFD_CLOEXEC = 1030;

/**
 * A new descriptor (close-on-exec, the lowest free) of the file open on `fd`, sharing its open file
 * description: no path resolved again. The caller owns it. Throws SysError (EBADF, EMFILE).
 */
export function dupFd(fd: number): number {
  const n = native.fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (n < 0) throw new SysError("fcntl", errno(), `${fd}, F_DUPFD_CLOEXEC`);
  return n;
}
