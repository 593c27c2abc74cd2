/**
 * A namespace's own socket counters: /proc/thread-self/net/sockstat and sockstat6, read by a thread
 * inside it. A dump of a protocol walks a table the namespaces share (UDP's, unless the namespace
 * was made with udp_child_hash_entries set), so a namespace whose counter says it holds none of
 * that protocol's sockets needs no dump: the count is as much a snapshot as the dump would be.
 */
import { closeSync } from "node:fs";
import { Errno, SysError } from "../sys/errors.js";
import { openProcNet, readProcFd, readProcFile, readProcNet } from "./proc-net.js";

/**
 * In-use sockets by the counter's name ("TCP", "UDP6", "UDPLITE", ...), and under "TCP tw" the
 * TCP line's TIME-WAIT sockets (of both families: sockstat6 has no such field); a missing file
 * counts nothing.
 */
export type SocketCounts = ReadonlyMap<string, number>;

/** The calling thread's namespace's counters. */
export function readSockstat(): SocketCounts {
  const counts = new Map<string, number>();
  // sockstat6 is absent without IPv6: its protocols are then not known to be empty
  for (const file of ["sockstat", "sockstat6"]) countInUse(readOrNothing(file), counts);
  return counts;
}

/**
 * A namespace's counters kept open, to be read later without entering it or opening them again
 * (the one pass opens them while listing its namespaces, and reads them after the pass):
 * sockstat and sockstat6 of the calling thread's namespace, or of the one process `pid` is in
 * (read without entering it: a socket counts in its own namespace's, whichever task holds it;
 * "inuse" counts bound sockets, connected ones among them, not a socket never bound), and with
 * `conntrack` its stat/nf_conntrack. Unlike readSockstat, a sockstat that cannot be opened or read
 * throws (SysError: the caller cannot tell a namespace without sockets from one it could not
 * count); sockstat6 absent (no IPv6) counts nothing. The caller closes it.
 */
export class HeldSockstat implements Disposable {
  readonly #fds: number[] = [];
  /** stat/nf_conntrack's descriptor: -1 where not asked for, undefined where nf_conntrack is not loaded. */
  #conntrack: number | undefined = -1;
  readonly #where: string;

  constructor(pid?: number, options: { conntrack?: boolean } = {}) {
    this.#where = `/proc/${pid ?? "thread-self"}/net`;
    try {
      const v4 = openProcNet("sockstat", pid);
      if (v4 === undefined) throw new SysError("open", Errno.ENOENT, `${this.#where}/sockstat`);
      this.#fds.push(v4);
      const v6 = openProcNet("sockstat6", pid);
      if (v6 !== undefined) this.#fds.push(v6);
      if (options.conntrack) this.#conntrack = openProcNet("stat/nf_conntrack", pid);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The counters as they are now (SocketCounts); throws what fs throws, or Error after close. */
  read(): SocketCounts {
    const counts = new Map<string, number>();
    if (this.#fds.length === 0) throw new Error("sockstat read after close");
    for (const fd of this.#fds) countInUse(readProcFd(fd), counts);
    return counts;
  }

  /**
   * The namespace's conntrack entries as they are now (as conntrackEntriesOf): undefined where
   * nf_conntrack was not loaded when it was opened. Throws SysError where the count cannot be
   * read, Error after close or where it was not asked for.
   */
  conntrackEntries(): number | undefined {
    if (this.#fds.length === 0 || this.#conntrack === -1) throw new Error("conntrack count not held");
    if (this.#conntrack === undefined) return undefined;
    return entriesColumn(readProcFd(this.#conntrack), `${this.#where}/stat/nf_conntrack`);
  }

  close(): void {
    for (const fd of this.#fds.splice(0)) closeSync(fd);
    if (this.#conntrack !== undefined && this.#conntrack !== -1) closeSync(this.#conntrack);
    this.#conntrack = -1;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

const IN_USE = ": inuse ";

/** "NAME: inuse N ..." lines, scanned without a regular expression: read for every namespace by a one-pass run. */
function countInUse(text: string | undefined, counts: Map<string, number>): void {
  if (text === undefined) return;
  for (let at = 0; at < text.length; ) {
    const next = text.indexOf("\n", at);
    const end = next < 0 ? text.length : next;
    const mark = text.indexOf(IN_USE, at);
    if (mark > at && mark < end) {
      const name = text.slice(at, mark);
      // TCP's line goes on "orphan N tw N alloc N mem N"
      const fields = text.slice(mark + IN_USE.length, end).split(" ");
      counts.set(name, Number(fields[0]));
      if (fields[1] === "orphan" && fields[3] === "tw") counts.set(`${name} tw`, Number(fields[4]));
    }
    at = end + 1;
  }
}

/**
 * The conntrack entries of the namespace process `pid` is in, read without entering it: the
 * "entries" column of /proc/PID/net/stat/nf_conntrack (net/netfilter/nf_conntrack_standalone.c:
 * a header line, then a line per CPU of hex counters, each starting with the namespace's count).
 * Undefined where nf_conntrack is not loaded; SysError when the process is gone or denied.
 */
export function conntrackEntriesOf(pid: number): number | undefined {
  const text = readProcNet("stat/nf_conntrack", pid);
  if (text === undefined) {
    if (readProcNet("sockstat", pid) === undefined)
      throw new SysError("open", Errno.ENOENT, `/proc/${pid}/net`);
    return undefined;
  }
  return entriesColumn(text, `/proc/${pid}/net/stat/nf_conntrack`);
}

/** The "entries" column of stat/nf_conntrack's text (its first counter line): SysError EIO if none. */
function entriesColumn(text: string, path: string): number {
  const [header, first] = text.split("\n");
  const column = header?.trim().split(/\s+/).indexOf("entries") ?? -1;
  const value = first?.trim().split(/\s+/)[column];
  if (column < 0 || value === undefined || !/^[0-9a-f]+$/.test(value)) {
    throw new SysError("read", Errno.EIO, `${path}: no entries column`);
  }
  return Number.parseInt(value, 16);
}

/** Every counter of sockstat and sockstat6 by line and field name: `get("TCP")?.get("tw")`. */
export type SockstatFields = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * The calling thread's namespace's sockstat and sockstat6 (absent without IPv6: nothing counted),
 * every "NAME: field value field value ..." line. Throws the read error of sockstat itself.
 */
export function readSockstatFields(): SockstatFields {
  const out = new Map<string, Map<string, number>>();
  const v4 = readProcNet("sockstat");
  if (v4 === undefined) throw new SysError("open", Errno.ENOENT, "/proc/thread-self/net/sockstat");
  for (const text of [v4, readProcNet("sockstat6") ?? ""]) {
    for (const line of text.split("\n")) {
      const m = /^(\w+): (.*)$/.exec(line);
      if (!m) continue;
      const fields = new Map<string, number>();
      for (const f of m[2]!.matchAll(/(\w+) (\d+)/g)) fields.set(f[1]!, Number(f[2]));
      out.set(m[1]!, fields);
    }
  }
  return out;
}

/**
 * One counter of the calling thread's namespace's /proc/net/snmp ("Tcp", "CurrEstab"), whose
 * lines come in pairs: the names, then the values. Undefined when it has no such counter.
 */
export function readSnmpCounter(group: string, name: string): number | undefined {
  const lines = (readProcNet("snmp") ?? "").split("\n").filter((l) => l.startsWith(`${group}: `));
  const names = lines[0]?.split(/\s+/);
  const values = lines[1]?.split(/\s+/);
  const at = names?.indexOf(name) ?? -1;
  return at > 0 && values?.[at] !== undefined ? Number(values[at]) : undefined;
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

/**
 * The conntrack entries of the calling thread's namespace (net.netfilter.nf_conntrack_count: the
 * count ctnetlink's statistics answer too); undefined where nf_conntrack is not loaded.
 */
export function conntrackEntries(): number | undefined {
  return readNumber("/proc/sys/net/netfilter/nf_conntrack_count");
}

/** A counter file that cannot be read only leaves its dumps in: never a failure. */
function readOrNothing(name: string): string | undefined {
  try {
    return readProcNet(name);
  } catch {
    return undefined;
  }
}

function readNumber(path: string): number | undefined {
  try {
    const value = Number(readProcFile(path).trim());
    return Number.isInteger(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
