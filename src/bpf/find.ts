/**
 * One pass over every task's open files for the sockets connected to a set of backends, in every
 * network namespace at once: the backends go into a hash map, the program (program.ts) reports
 * each matching socket it meets, and a socket held by several descriptors or processes is kept
 * once, by its cookie. The same pass reports every held UDP socket with a local port, counted
 * here by namespace, each once (by inode number), for the counters to be compared with; a second
 * pass, run after the counters are read, tells which of them were still held then.
 */

import { fstatSync } from "node:fs";
import { addressWords } from "../diag/address.js";
import { QueryError } from "../options/errors.js";
import { MisuseError } from "../sys/errors.js";
import {
  BPF_MAP_TYPE_HASH,
  bpfMapCreate,
  bpfMapUpdate,
  close,
  descriptorOf,
  IPPROTO_TCP,
  IPPROTO_UDP,
  openPidfd,
  socketCookie,
} from "../sys/index.js";
import { Btf } from "./btf.js";
import { HeldCount, type HeldUdp } from "./held.js";
import { loadIteratorProgram, readIterator } from "./iterator.js";
import { type TaskFileLayout, taskFileLayout } from "./layout.js";
import { INODE_RECORD_SIZE, socketFinderProgram, socketInodesProgram } from "./program.js";
import { decodeRecord, type FoundSocket, KEY_SIZE, Record } from "./record.js";

export type { HeldUdp } from "./held.js";
export type { FoundSocket } from "./record.js";

/** A backend: the destination address (IPv4 or IPv6 text) and port sockets are connected to. */
export interface Backend {
  readonly address: string;
  readonly port: number;
}

export type OnePassProtocol = "udp" | "tcp";

export interface FindOptions {
  readonly backends: readonly Backend[];
  /** Default ["udp"]. */
  readonly protocols?: readonly OnePassProtocol[];
}

/** A socket whose cookie could not be asked for (its holder closed it or exited meanwhile). */
export interface CookieNote {
  readonly kind: "cookie-unknown";
  readonly inode: number;
  readonly pid: number;
  readonly fd: number;
  /** What happened: the failed call's message, or that the descriptor names another file now. */
  readonly reason: string;
}

export interface FoundSockets {
  /** Each socket once, with one process holding it; `cookie` 0n only where a note says why. */
  readonly sockets: FoundSocket[];
  /**
   * By namespace (its inode number), the UDP sockets any task holds there — found or not — that
   * sockstat's `UDP: inuse` and `UDP6: inuse` count (those with a local port), each once. A
   * namespace with none is absent.
   */
  readonly held: ReadonlyMap<number, HeldUdp>;
  /** Found records the pass wrote: one per descriptor holding a matching socket. */
  readonly records: number;
  readonly notes: CookieNote[];
  /**
   * A second pass over every task's open files (once: it throws MisuseError when asked again):
   * by namespace, of the sockets `held` counts, those some task still holds — each alive at every
   * moment between its sighting in the first pass and in this one, so a counter read in between
   * counts it. A namespace with none is absent. Throws VerifierError or SysError as the first pass.
   */
  readonly seenAgain: () => ReadonlyMap<number, HeldUdp>;
}

const PROTOCOL_NUMBERS: Record<OnePassProtocol, number> = { udp: IPPROTO_UDP, tcp: IPPROTO_TCP };

let vmlinuxLayout: TaskFileLayout | undefined;
/** The held sockets the last pass counted: the next pass makes room for as many at once. */
let heldBefore = 0;

/** The running kernel's layout, read from its BTF once per process. BtfError when it lacks one. */
export function kernelLayout(): TaskFileLayout {
  vmlinuxLayout ??= taskFileLayout(Btf.vmlinux());
  return vmlinuxLayout;
}

/** The map keys of `backends` (checked: QueryError names a bad one), without repeats. */
export function backendKeys(backends: readonly Backend[]): Buffer[] {
  if (!Array.isArray(backends)) throw new QueryError("backends", String(backends), "expected an array");
  const keys = new Map<string, Buffer>();
  for (const backend of backends) {
    const { address, port } = (backend ?? {}) as Partial<Backend>;
    const v6 = typeof address === "string" && address.includes(":");
    const words = typeof address === "string" ? addressWords(address, v6) : undefined;
    if (words === undefined) throw new QueryError("backends", String(address), "not an IPv4 or IPv6 address");
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
      throw new QueryError("backends", `${address} port ${port}`, "a port is an integer from 1 to 65535");
    }
    const key = Buffer.alloc(KEY_SIZE);
    const mapped: readonly number[] = v6 ? words : [0, 0, 0xffff, words[0]];
    for (let i = 0; i < 4; i++) key.writeUInt32BE((mapped[i] as number) >>> 0, 4 * i);
    key.writeUInt16BE(port as number, 16);
    keys.set(key.toString("hex"), key);
  }
  return [...keys.values()];
}

function protocolNumbers(protocols: readonly OnePassProtocol[] | undefined): number[] {
  const given = protocols ?? ["udp"];
  if (!Array.isArray(given) || given.length === 0) {
    throw new QueryError("protocols", String(given), 'expected a non-empty array of "udp" and "tcp"');
  }
  return given.map((p) => {
    const number = PROTOCOL_NUMBERS[p as OnePassProtocol];
    if (number === undefined) throw new QueryError("protocols", String(p), 'expected "udp" or "tcp"');
    return number;
  });
}

/**
 * The socket-finding program, loaded, with a map of `keys` (closed here: the program holds it).
 * Its descriptor is the caller's to close. Throws BtfError, VerifierError or SysError.
 */
export function loadFinder(keys: readonly Buffer[], protocols: readonly number[]): number {
  const layout = kernelLayout();
  const value = Buffer.alloc(1, 1);
  const mapFd = bpfMapCreate(
    "sockdiag_bknds",
    BPF_MAP_TYPE_HASH,
    KEY_SIZE,
    value.length,
    Math.max(1, keys.length),
  );
  try {
    for (const key of keys) bpfMapUpdate(mapFd, key, value);
    const ports = keys.map((key) => key.readUInt16BE(KEY_SIZE - 2));
    const insns = socketFinderProgram({ layout, mapFd, protocols, ports });
    return loadIteratorProgram({ name: "sockdiag_find", insns, attachBtfId: layout.attachBtfId });
  } finally {
    close(mapFd);
  }
}

/**
 * The sockets of `protocols` connected to one of `backends`, in every network namespace, found in
 * one pass over the open files of every task of the caller's PID namespace. Throws BtfError,
 * VerifierError or SysError (EPERM without the privileges) when the pass cannot run; nothing
 * stays loaded either way.
 */
export function findConnectedSockets(options: FindOptions): FoundSockets {
  const keys = backendKeys(options.backends);
  const protocols = protocolNumbers(options.protocols);
  const progFd = loadFinder(keys, protocols);
  // A socket no one asked the cookie of yet has none (0): those are told apart by inode.
  const byCookie = new Map<bigint, FoundSocket>();
  const byInode = new Map<number, FoundSocket>();
  const held = new HeldCount(heldBefore);
  let records = 0;
  try {
    let halves: Uint16Array = new Uint16Array(0);
    let words: Uint32Array = new Uint32Array(0);
    readIterator(progFd, (buffer, length) => {
      if (words.buffer !== buffer.buffer) {
        halves = new Uint16Array(buffer.buffer, buffer.byteOffset, buffer.length >>> 1);
        words = new Uint32Array(buffer.buffer, buffer.byteOffset, buffer.length >>> 2);
      }
      const view = new DataView(buffer.buffer, buffer.byteOffset, length);
      let at = 0;
      for (;;) {
        // The held records, 100,000 on a busy node, up to the next found one.
        at = held.take(halves, words, at, length);
        if (at + Record.size > length) break;
        records++;
        const cookie = view.getBigUint64(at + Record.cookie, true);
        if (cookie === 0n) {
          const inode = Number(view.getBigUint64(at + Record.inode, true));
          if (!byInode.has(inode)) byInode.set(inode, decodeRecord(view, at));
        } else if (!byCookie.has(cookie)) byCookie.set(cookie, decodeRecord(view, at));
        at += Record.size;
      }
      return at;
    });
  } finally {
    close(progFd);
  }
  heldBefore = held.sockets;
  let again: ReadonlyMap<number, HeldUdp> | undefined;
  const seenAgain = () => {
    if (again) throw new MisuseError("the second pass of a find ran already");
    again = passAgain(held);
    return again;
  };
  const notes: CookieNote[] = [];
  return { sockets: withCookies(byCookie, byInode, notes), held: held.byNetns, records, notes, seenAgain };
}

/** The sockets found: those with a cookie, then those without, each asked for it (askCookie). */
function withCookies(
  byCookie: Map<bigint, FoundSocket>,
  byInode: Map<number, FoundSocket>,
  notes: CookieNote[],
): FoundSocket[] {
  const sockets = [...byCookie.values()];
  const pidfds = new Map<number, number | Error>();
  try {
    for (const socket of byInode.values()) {
      const cookie = askCookie(socket, pidfds, notes);
      if (cookie !== 0n && byCookie.has(cookie)) continue;
      sockets.push(cookie === 0n ? socket : { ...socket, cookie });
    }
  } finally {
    for (const pidfd of pidfds.values()) if (typeof pidfd === "number") close(pidfd);
  }
  return sockets;
}

/** The second pass (socketInodesProgram): `held`'s sockets some task holds now, by namespace. */
function passAgain(held: HeldCount): ReadonlyMap<number, HeldUdp> {
  const layout = kernelLayout();
  const progFd = loadIteratorProgram({
    name: "sockdiag_again",
    insns: socketInodesProgram(layout),
    attachBtfId: layout.attachBtfId,
  });
  try {
    let words: Uint32Array = new Uint32Array(0);
    readIterator(progFd, (buffer, length) => {
      if (words.buffer !== buffer.buffer)
        words = new Uint32Array(buffer.buffer, buffer.byteOffset, buffer.length >>> 2);
      const whole = length - (length % INODE_RECORD_SIZE);
      held.seenAgain(words, 0, whole / INODE_RECORD_SIZE);
      return whole;
    });
  } finally {
    close(progFd);
  }
  return held.again();
}

/**
 * The cookie of a socket that had none, asked through a copy of its holder's descriptor: the one
 * sock_diag will report from now on. 0n, with a note, when the holder no longer has it. `pidfds`
 * keeps each holder's pidfd (or why it could not be opened) for the next of its sockets.
 */
function askCookie(socket: FoundSocket, pidfds: Map<number, number | Error>, notes: CookieNote[]): bigint {
  let copy: number | undefined;
  let reason: string;
  try {
    let pidfd = pidfds.get(socket.pid);
    if (pidfd === undefined) {
      try {
        pidfd = openPidfd(socket.pid);
      } catch (err) {
        pidfd = err as Error;
      }
      pidfds.set(socket.pid, pidfd);
    }
    if (pidfd instanceof Error) throw pidfd;
    copy = descriptorOf(pidfd, socket.fd, socket.pid);
    // The descriptor may name another file by now: only the same socket's cookie will do.
    if (fstatSync(copy).ino === socket.inode) return socketCookie(copy);
    reason = "the descriptor names another file now";
  } catch (err) {
    reason = (err as Error).message;
  } finally {
    if (copy !== undefined) close(copy);
  }
  notes.push({ kind: "cookie-unknown", inode: socket.inode, pid: socket.pid, fd: socket.fd, reason });
  return 0n;
}
