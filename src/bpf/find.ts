/**
 * One pass over every task's open files for the sockets connected to a set of backends, in every
 * network namespace at once: the backends go into a hash map, the program (program.ts) reports
 * each matching socket it meets, and a socket held by several descriptors or processes is kept
 * once, by its cookie. The same pass counts the UDP sockets tasks hold in each namespace (see
 * program.ts), for the counters to be compared with.
 */

import { fstatSync } from "node:fs";
import { addressWords } from "../diag/address.js";
import { QueryError } from "../options/errors.js";
import {
  BPF_F_NO_PREALLOC,
  BPF_MAP_TYPE_HASH,
  bpfMapCreate,
  bpfMapLookup,
  bpfMapNextKey,
  bpfMapUpdate,
  close,
  IPPROTO_TCP,
  IPPROTO_UDP,
  socketCookie,
  takeDescriptor,
} from "../sys/index.js";
import { Btf } from "./btf.js";
import { loadIteratorProgram, readIterator } from "./iterator.js";
import { type TaskFileLayout, taskFileLayout } from "./layout.js";
import { HeldCount, socketFinderProgram } from "./program.js";
import { decodeRecord, type FoundSocket, KEY_SIZE, Record } from "./record.js";

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

/** UDP sockets with a local port that tasks hold in a namespace, each once, by family. */
export interface HeldUdp {
  readonly v4: number;
  readonly v6: number;
}

export interface FoundSockets {
  /** Each socket once, with one process holding it; `cookie` 0n only where a note says why. */
  readonly sockets: FoundSocket[];
  /**
   * By namespace (its inode number), the UDP sockets any task holds there — found or not — that
   * sockstat's `UDP: inuse` and `UDP6: inuse` count (those with a local port), each once. A
   * namespace with none is absent. Never more than are held: a socket beyond the maps' room
   * goes uncounted.
   */
  readonly held: ReadonlyMap<number, HeldUdp>;
  /** Records the pass wrote: one per descriptor holding a matching socket. */
  readonly records: number;
  readonly notes: CookieNote[];
}

const PROTOCOL_NUMBERS: Record<OnePassProtocol, number> = { udp: IPPROTO_UDP, tcp: IPPROTO_TCP };

let vmlinuxLayout: TaskFileLayout | undefined;

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
 * Held UDP sockets the pass remembers (to count each once) and namespaces it counts them in: the
 * maps' entries are allocated as they are added (about 100 bytes a socket), so the bounds cost
 * nothing until reached; beyond them a namespace's count falls short, and it is walked.
 */
const MAX_HELD = 1 << 21;
const MAX_NAMESPACES = 1 << 16;

/** A loaded socket-finding program and the map of its counts, both the caller's to close. */
export interface Finder {
  readonly progFd: number;
  readonly countsFd: number;
}

/**
 * The socket-finding program, loaded, with a map of `keys` (the backend and held maps' descriptors
 * are closed: the program holds them). Throws BtfError, VerifierError or SysError.
 */
export function loadFinder(keys: readonly Buffer[], protocols: readonly number[]): Finder {
  const layout = kernelLayout();
  const value = Buffer.alloc(1, 1);
  const fds: number[] = [];
  const map = (name: string, keySize: number, valueSize: number, max: number, flags = 0) => {
    const fd = bpfMapCreate(name, BPF_MAP_TYPE_HASH, keySize, valueSize, max, flags);
    fds.push(fd);
    return fd;
  };
  try {
    const mapFd = map("sockdiag_bknds", KEY_SIZE, value.length, Math.max(1, keys.length));
    for (const key of keys) bpfMapUpdate(mapFd, key, value);
    const heldMapFd = map("sockdiag_held", 8, 1, MAX_HELD, BPF_F_NO_PREALLOC);
    const countsFd = map("sockdiag_counts", 4, HeldCount.size, MAX_NAMESPACES, BPF_F_NO_PREALLOC);
    const ports = keys.map((key) => key.readUInt16BE(KEY_SIZE - 2));
    const insns = socketFinderProgram({ layout, mapFd, protocols, ports, heldMapFd, countsMapFd: countsFd });
    const progFd = loadIteratorProgram({ name: "sockdiag_find", insns, attachBtfId: layout.attachBtfId });
    fds.pop(); // the counts map's: it stays open, read after the pass
    return { progFd, countsFd };
  } finally {
    for (const fd of fds) close(fd);
  }
}

/** Every namespace's count in the counts map. */
function readHeld(countsFd: number): Map<number, HeldUdp> {
  const held = new Map<number, HeldUdp>();
  const key = Buffer.alloc(4);
  const next = Buffer.alloc(4);
  const value = Buffer.alloc(HeldCount.size);
  let first = true;
  while (bpfMapNextKey(countsFd, first ? undefined : key, next)) {
    first = false;
    next.copy(key);
    if (!bpfMapLookup(countsFd, key, value)) continue;
    held.set(key.readUInt32LE(0), {
      v4: value.readUInt32LE(HeldCount.v4),
      v6: value.readUInt32LE(HeldCount.v6),
    });
  }
  return held;
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
  const { progFd, countsFd } = loadFinder(keys, protocols);
  let held: Map<number, HeldUdp>;
  // A socket no one asked the cookie of yet has none (0): those are told apart by inode.
  const byCookie = new Map<bigint, FoundSocket>();
  const byInode = new Map<bigint, FoundSocket>();
  let records = 0;
  try {
    readIterator(progFd, Record.size, (buffer, length) => {
      const view = new DataView(buffer.buffer, buffer.byteOffset, length);
      for (let at = 0; at < length; at += Record.size) {
        records++;
        const cookie = view.getBigUint64(at + Record.cookie, true);
        const [map, key] =
          cookie === 0n ? [byInode, view.getBigUint64(at + Record.inode, true)] : [byCookie, cookie];
        if (!map.has(key)) map.set(key, decodeRecord(view, at));
      }
    });
    held = readHeld(countsFd);
  } finally {
    close(progFd);
    close(countsFd);
  }
  const notes: CookieNote[] = [];
  const sockets = [...byCookie.values()];
  for (const socket of byInode.values()) {
    const cookie = askCookie(socket, notes);
    if (cookie !== 0n && byCookie.has(cookie)) continue;
    sockets.push(cookie === 0n ? socket : { ...socket, cookie });
  }
  return { sockets, held, records, notes };
}

/**
 * The cookie of a socket that had none, asked through a copy of its holder's descriptor: the one
 * sock_diag will report from now on. 0n, with a note, when the holder no longer has it.
 */
function askCookie(socket: FoundSocket, notes: CookieNote[]): bigint {
  let copy: number | undefined;
  let reason: string;
  try {
    copy = takeDescriptor(socket.pid, socket.fd);
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
