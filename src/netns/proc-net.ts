/**
 * The files of /proc/thread-self/net/, read by a thread inside the namespace they describe: what
 * /proc/net shows is the namespace of the thread that reads it (fs/proc/proc_net.c).
 */
import { readFileSync } from "node:fs";

/**
 * The text of /proc/thread-self/net/NAME ("raw", "sockstat6", ...) for the calling thread's
 * namespace; undefined when the file does not exist (raw6 and sockstat6 without IPv6).
 */
export function readProcNet(name: string): string | undefined {
  try {
    return readFileSync(`/proc/thread-self/net/${name}`, "latin1");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
