/**
 * pidfd_open(2) and pidfd_getfd(2): a copy of another process's descriptor, to ask its socket
 * what only the socket can answer (its cookie). Root's privilege (ptrace access) is required.
 */
import { SysError } from "./errors.js";
import { errno, native } from "./libc.js";
import { close } from "./socket.js";

// The same numbers on every architecture (the syscall table unified from 5.x on).
const SYS_PIDFD_OPEN = 434;
const SYS_PIDFD_GETFD = 438;

/** pidfd_open(2): a descriptor of process `pid`, owned by the caller. */
export function openPidfd(pid: number): number {
  const pidfd = Number(native.pidfdOpen(SYS_PIDFD_OPEN, pid, 0));
  if (pidfd < 0) throw new SysError("pidfd_open", errno(), String(pid));
  return pidfd;
}

/** pidfd_getfd(2): a duplicate, in this process, of descriptor `fd` of `pidfd`'s process; the caller's. */
export function descriptorOf(pidfd: number, fd: number, pid: number): number {
  const copy = Number(native.pidfdGetfd(SYS_PIDFD_GETFD, pidfd, fd, 0));
  if (copy < 0) throw new SysError("pidfd_getfd", errno(), `${pid}, ${fd}`);
  return copy;
}

/** A duplicate, in this process, of descriptor `fd` of process `pid`; owned by the caller. */
export function takeDescriptor(pid: number, fd: number): number {
  const pidfd = openPidfd(pid);
  try {
    return descriptorOf(pidfd, fd, pid);
  } finally {
    close(pidfd);
  }
}
