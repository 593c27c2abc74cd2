/**
 * The files of /proc/thread-self/net/, read by a thread inside the namespace they describe: what
 * /proc/net shows is the namespace of the thread that reads it (fs/proc/proc_net.c).
 */
import { readFileSync } from "node:fs";
import { SysError } from "../sys/errors.js";

/**
 * The text of /proc/thread-self/net/NAME ("raw", "sockstat6", ...) for the calling thread's
 * namespace; undefined when the file does not exist (raw6 and sockstat6 without IPv6).
 */
export function readProcNet(name: string): string | undefined {
  const path = `/proc/thread-self/net/${name}`;
  try {
    return readFileSync(path, "latin1");
  } catch (err) {
    const { code, errno } = err as NodeJS.ErrnoException;
    if (code === "ENOENT") return undefined;
    throw typeof errno === "number" ? new SysError("open", -errno, path) : err;
  }
}
