/**
 * Reading /proc files, which a walk does in every namespace: those of /proc/thread-self/net/, read
 * by a thread inside the namespace they describe (what /proc/net shows is the namespace of the
 * thread that reads it, fs/proc/proc_net.c), and the namespace's sysctls.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { SysError } from "../sys/errors.js";

/** The buffer every read starts in: the counters a walk reads in each namespace fit in one page. */
const page = Buffer.allocUnsafe(4096);

/**
 * The text of /proc/thread-self/net/NAME ("raw", "sockstat6", ...) for the calling thread's
 * namespace, or of /proc/PID/net/NAME for the namespace process `pid` is in (read without entering
 * it); undefined when the file does not exist (raw6 and sockstat6 without IPv6, a process gone).
 */
export function readProcNet(name: string, pid?: number): string | undefined {
  const path = `/proc/${pid ?? "thread-self"}/net/${name}`;
  try {
    return readProcFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw sysError(err, path);
  }
}

/**
 * /proc/thread-self/net/NAME (or /proc/PID/net/NAME) opened, for readProcFd to read now and later:
 * the file stays the namespace's it was opened in (fs/proc/proc_net.c binds it to its net), so a
 * thread reads it again from anywhere. Undefined when it does not exist; throws SysError else. The
 * caller closes the descriptor.
 */
export function openProcNet(name: string, pid?: number): number | undefined {
  const path = `/proc/${pid ?? "thread-self"}/net/${name}`;
  try {
    return openSync(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw sysError(err, path);
  }
}

/**
 * The whole text of a /proc file (latin1), read into a reused page: open, read to the end, close —
 * no stat and no buffer per read, as readFileSync takes (a third of the cost of a sysctl read).
 * Throws what fs throws.
 */
export function readProcFile(path: string): string {
  const fd = openSync(path, "r");
  try {
    return readAll(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * The whole text of an open /proc file, read again from its start (pread at 0 makes a seq_file
 * show its counters anew). Throws what fs throws.
 */
export function readProcFd(fd: number): string {
  return readAll(fd, 0);
}

/**
 * Everything left to read from `fd` as latin1 text (a /proc file has no size to ask for first);
 * from offset `from` on when given, else from where the file stands.
 */
function readAll(fd: number, from?: number): string {
  let buf = page;
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const n = readSync(fd, buf, length, buf.length - length, from === undefined ? null : from + length);
    if (n === 0) return buf.toString("latin1", 0, length);
    length += n;
  }
}

function sysError(err: unknown, path: string): unknown {
  const { errno, syscall } = err as NodeJS.ErrnoException;
  return typeof errno === "number" ? new SysError(syscall ?? "read", -errno, path) : err;
}
