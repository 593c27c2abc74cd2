/**
 * A namespace's own socket counters: /proc/thread-self/net/sockstat and sockstat6, read by a thread
 * inside it. A dump of a protocol walks a table the namespaces share (UDP's, unless the namespace
 * was made with udp_child_hash_entries set), so a namespace whose counter says it holds none of
 * that protocol's sockets needs no dump: the count is as much a snapshot as the dump would be.
 */
import { readFileSync } from "node:fs";

/** In-use sockets by the counter's name ("UDP", "UDP6", "UDPLITE", ...); a missing file counts nothing. */
export type SocketCounts = ReadonlyMap<string, number>;

/** The calling thread's namespace's counters. */
export function readSockstat(): SocketCounts {
  const counts = new Map<string, number>();
  for (const file of ["/proc/thread-self/net/sockstat", "/proc/thread-self/net/sockstat6"]) {
    let text: string;
    try {
      text = readFileSync(file, "latin1");
    } catch {
      continue; // sockstat6 is absent without IPv6: its protocols are then not known to be empty
    }
    for (const m of text.matchAll(/^(\w+): inuse (\d+)/gm)) counts.set(m[1]!, Number(m[2]));
  }
  return counts;
}

/**
 * The UDP hash buckets of the calling thread's namespace (net.ipv4.udp_hash_entries): positive when
 * it owns its table, negative when it shares the host's; undefined on a kernel without the knob.
 */
export function udpHashEntries(): number | undefined {
  return readNumber("/proc/sys/net/ipv4/udp_hash_entries");
}

/**
 * net.ipv4.udp_child_hash_entries (Linux 6.2+): the buckets of the UDP table a namespace created
 * from now on gets of its own; 0 means it shares the host's. Undefined on a kernel without it.
 */
export function udpChildHashEntries(): number | undefined {
  return readNumber("/proc/sys/net/ipv4/udp_child_hash_entries");
}

function readNumber(path: string): number | undefined {
  try {
    const value = Number(readFileSync(path, "latin1").trim());
    return Number.isInteger(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
