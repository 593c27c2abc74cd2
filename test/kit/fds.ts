/** What a test process holds open: its socket descriptors (worker threads' netlink sockets among them). */
import { readdirSync, readlinkSync } from "node:fs";

/** How many socket descriptors this process holds now. */
export function socketFds(): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:")) n++;
    } catch {
      // closed between readdir and readlink
    }
  }
  return n;
}
