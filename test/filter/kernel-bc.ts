/**
 * Test-only model of the kernel's side of INET_DIAG_REQ_BYTECODE, written from net/ipv4/inet_diag.c:
 * inet_diag_bc_audit (is a program accepted?) and inet_diag_bc_run (does a socket pass?). It lets
 * tests check compiled programs on many random sockets without a kernel; the kernel itself checks
 * them through the sockets layer.
 */
import type { InetSocket } from "../../src/diag/socket.js";

const NOP = 0;
const JMP = 1;
const S_GE = 2;
const S_LE = 3;
const D_GE = 4;
const D_LE = 5;
const AUTO = 6;
const S_COND = 7;
const D_COND = 8;
const DEV_COND = 9;
const MARK_COND = 10;
const S_EQ = 11;
const D_EQ = 12;
const CGROUP_COND = 13;
const AF_UNSPEC = 0;
const AF_INET = 2;
const AF_INET6 = 10;
/** SOCK_BINDPORT_LOCK (include/net/sock.h). */
export const SOCK_BINDPORT_LOCK = 8;

/** struct inet_diag_entry: what inet_diag_bc_sk gathers about one socket. */
export interface BcEntry {
  family: number;
  saddr: readonly number[];
  daddr: readonly number[];
  sport: number;
  dport: number;
  ifindex: number;
  userlocks: number;
  mark: number;
  cgroupId: bigint;
}

/** entryOf builds the kernel's entry for a socket; `portLocked` is the bit sock_diag does not report. */
export function entryOf(s: InetSocket, portLocked: boolean): BcEntry {
  return {
    family: s.family === "inet" ? AF_INET : AF_INET6,
    saddr: [s.srcWords[0] >>> 0, s.srcWords[1] >>> 0, s.srcWords[2] >>> 0, s.srcWords[3] >>> 0],
    daddr: [s.dstWords[0] >>> 0, s.dstWords[1] >>> 0, s.dstWords[2] >>> 0, s.dstWords[3] >>> 0],
    sport: s.sport,
    dport: s.dport,
    ifindex: s.ifindex,
    userlocks: portLocked ? SOCK_BINDPORT_LOCK : 0,
    mark: s.mark ?? 0,
    cgroupId: s.cgroupId ?? 0n,
  };
}

/** Audit outcome: 0, or the errno name the kernel would answer. */
export type AuditResult = 0 | "EINVAL" | "EPERM";

/** auditBytecode mirrors inet_diag_bc_audit. */
export function auditBytecode(bc: Buffer, netAdmin = true): AuditResult {
  if (bc.length < 4) return "EINVAL";
  let at = 0;
  let len = bc.length;
  while (len > 0) {
    if (len < 4) return "EINVAL";
    const code = bc[at]!;
    const yes = bc[at + 1]!;
    const no = bc.readUInt16LE(at + 2);
    let minLen = 4;
    switch (code) {
      case S_COND:
      case D_COND: {
        minLen += 8;
        if (len < minLen) return "EINVAL";
        const family = bc[at + 4]!;
        const addrLen = family === AF_UNSPEC ? 0 : family === AF_INET ? 4 : family === AF_INET6 ? 16 : -1;
        if (addrLen < 0) return "EINVAL";
        minLen += addrLen;
        if (len < minLen || bc[at + 5]! > 8 * addrLen) return "EINVAL";
        break;
      }
      case DEV_COND:
        minLen += 4;
        if (len < minLen) return "EINVAL";
        break;
      case S_EQ:
      case S_GE:
      case S_LE:
      case D_EQ:
      case D_GE:
      case D_LE:
        minLen += 4;
        if (len < minLen) return "EINVAL";
        break;
      case MARK_COND:
        if (!netAdmin) return "EPERM";
        minLen += 8;
        if (len < minLen) return "EINVAL";
        break;
      case CGROUP_COND:
        minLen += 8;
        if (len < minLen) return "EINVAL";
        break;
      case AUTO:
      case JMP:
      case NOP:
        break;
      default:
        return "EINVAL";
    }
    if (code !== NOP) {
      if (no < minLen || no > len + 4 || no & 3) return "EINVAL";
      if (no < len && !onYesChain(bc, len - no)) return "EINVAL";
    }
    if (yes < minLen || yes > len + 4 || yes & 3) return "EINVAL";
    at += yes;
    len -= yes;
  }
  return len === 0 ? 0 : "EINVAL";
}

/** valid_cc: is there an op, reached from the start by `yes` steps, with `remaining` bytes from it to the end? */
function onYesChain(bc: Buffer, remaining: number): boolean {
  let at = 0;
  let len = bc.length;
  while (len >= 0) {
    if (remaining > len) return false;
    if (remaining === len) return true;
    const yes = bc[at + 1]!;
    if (yes < 4 || yes & 3) return false;
    len -= yes;
    at += yes;
  }
  return false;
}

/** runBytecode mirrors inet_diag_bc_run on an audited program. */
export function runBytecode(bc: Buffer, e: BcEntry): boolean {
  let at = 0;
  let len = bc.length;
  while (len > 0) {
    const code = bc[at]!;
    let yes = true;
    switch (code) {
      case JMP:
        yes = false;
        break;
      case S_EQ:
      case S_GE:
      case S_LE:
      case D_EQ:
      case D_GE:
      case D_LE: {
        const value = code === S_EQ || code === S_GE || code === S_LE ? e.sport : e.dport;
        const port = bc.readUInt16LE(at + 6);
        yes =
          code === S_EQ || code === D_EQ
            ? value === port
            : code === S_GE || code === D_GE
              ? value >= port
              : value <= port;
        break;
      }
      case AUTO:
        yes = (e.userlocks & SOCK_BINDPORT_LOCK) === 0;
        break;
      case S_COND:
      case D_COND:
        yes = hostcondMatches(
          bc,
          at + 4,
          code === S_COND ? e.sport : e.dport,
          code === S_COND ? e.saddr : e.daddr,
          e,
        );
        break;
      case DEV_COND:
        yes = bc.readUInt32LE(at + 4) === e.ifindex;
        break;
      case MARK_COND:
        yes = (e.mark & bc.readUInt32LE(at + 8)) >>> 0 === bc.readUInt32LE(at + 4);
        break;
      case CGROUP_COND:
        yes = bc.readBigUInt64LE(at + 4) === e.cgroupId;
        break;
    }
    const step = yes ? bc[at + 1]! : bc.readUInt16LE(at + 2);
    at += step;
    len -= step;
  }
  return len === 0;
}

function hostcondMatches(bc: Buffer, c: number, port: number, addr: readonly number[], e: BcEntry): boolean {
  const family = bc[c]!;
  const prefixLen = bc[c + 1]!;
  const condPort = bc.readInt32LE(c + 4);
  if (condPort !== -1 && condPort !== port) return false;
  const condAddr = (i: number) => bc.readUInt32BE(c + 8 + 4 * i);
  if (family !== AF_UNSPEC && family !== e.family) {
    if (e.family === AF_INET6 && family === AF_INET)
      return (
        addr[0] === 0 &&
        addr[1] === 0 &&
        addr[2] === 0xffff &&
        bitstringMatch([addr[3]!], condAddr, prefixLen)
      );
    return false;
  }
  if (prefixLen === 0) return true;
  return bitstringMatch(addr, condAddr, prefixLen);
}

/** bitstring_match on big-endian words. */
function bitstringMatch(a: readonly number[], b: (i: number) => number, bits: number): boolean {
  const words = bits >> 5;
  for (let i = 0; i < words; i++) if (a[i] !== b(i)) return false;
  const rest = bits & 31;
  if (rest === 0) return true;
  const mask = (0xffffffff << (32 - rest)) >>> 0;
  return ((a[words]! ^ b(words)) & mask) >>> 0 === 0;
}
