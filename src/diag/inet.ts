/**
 * inet_diag wire formats (/usr/include/linux/inet_diag.h): struct inet_diag_req_v2 with its
 * struct inet_diag_sockid, written into a caller's MessageWriter; the INET_DIAG_REQ_BYTECODE
 * program (struct inet_diag_bc_op and the conditions that follow it), laid out from ops; and struct
 * inet_diag_msg with its attributes, decoded into an InetSocket.
 */
import {
  DecodeError,
  DecodeScratch,
  type MessageWriter,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  putU32LE,
} from "../netlink/index.js";
import { IPPROTO_RAW } from "../sys/index.js";
import type { AddressTexts } from "./address.js";
import {
  AF_INET,
  AF_INET6,
  INET_DIAG_BC_AUTO,
  INET_DIAG_BC_CGROUP_COND,
  INET_DIAG_BC_D_COND,
  INET_DIAG_BC_DEV_COND,
  INET_DIAG_BC_JMP,
  INET_DIAG_BC_MARK_COND,
  INET_DIAG_BC_S_COND,
  INET_DIAG_CGROUP_ID,
  INET_DIAG_CONG,
  INET_DIAG_INFO,
  INET_DIAG_MARK,
  INET_DIAG_MEMINFO,
  INET_DIAG_NOCOOKIE,
  INET_DIAG_PROTOCOL,
  INET_DIAG_REQ_BYTECODE,
  INET_DIAG_REQ_PROTOCOL,
  INET_DIAG_SHUTDOWN,
  INET_DIAG_SKMEMINFO,
  INET_DIAG_SKV6ONLY,
  INET_DIAG_TCLASS,
  INET_DIAG_TOS,
  SOCK_DESTROY,
  SOCK_DIAG_BY_FAMILY,
} from "./constants.js";
import { INET_DIAG_MSG_LEN, InetSocket, writeSockId } from "./inet-socket.js";
import { decodeSkMemInfo } from "./meminfo.js";
import type { InetProtocol, SocketNetns } from "./socket.js";
import { decodeTcpInfo } from "./tcpinfo.js";

/** sizeof(struct inet_diag_req_v2). */
export const INET_DIAG_REQ_V2_LEN = 56;

/** The fields of struct inet_diag_req_v2 a dump needs. */
export interface InetDumpRequest {
  /** AF_INET or AF_INET6. */
  family: number;
  /** IPPROTO_*; values above 255 (MPTCP) travel in an INET_DIAG_REQ_PROTOCOL attribute. */
  protocol: number;
  /** idiag_ext: bit (1 << (attr - 1)) for each INET_DIAG_* extension wanted. */
  ext: number;
  /** idiag_states: bit (1 << state) for each state wanted. */
  states: number;
  /** INET_DIAG_REQ_BYTECODE program, if any. */
  bytecode?: Buffer | undefined;
}

/**
 * Write struct inet_diag_req_v2 at `o` (56 zeroed bytes, reserved by the caller):
 *   __u8 sdiag_family; __u8 sdiag_protocol; __u8 idiag_ext; __u8 pad; __u32 idiag_states;
 *   struct inet_diag_sockid id;
 * The id is left zero with the cookie set to INET_DIAG_NOCOOKIE, as a dump wants.
 */
function writeReqHeader(
  b: Buffer,
  o: number,
  family: number,
  protocol: number,
  ext: number,
  states: number,
): void {
  b[o] = family;
  b[o + 1] = protocol & 0xff;
  b[o + 2] = ext;
  // For raw dumps the pad byte is sdiag_raw_protocol; IPPROTO_RAW asks for every raw socket.
  if (protocol === IPPROTO_RAW) b[o + 3] = IPPROTO_RAW;
  putU32LE(b, o + 4, states >>> 0);
}

/** Append a complete SOCK_DIAG_BY_FAMILY dump request to `w`. Allocates nothing. */
export function writeInetDumpRequest(w: MessageWriter, seq: number, req: InetDumpRequest): void {
  w.begin(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq);
  const o = w.reserve(INET_DIAG_REQ_V2_LEN);
  writeReqHeader(w.buf, o, req.family, req.protocol, req.ext, req.states);
  putU32LE(w.buf, o + 8 + 40, INET_DIAG_NOCOOKIE);
  putU32LE(w.buf, o + 8 + 44, INET_DIAG_NOCOOKIE);
  if (req.bytecode) w.attr(INET_DIAG_REQ_BYTECODE, req.bytecode);
  if (req.protocol > 0xff) w.attrU32(INET_DIAG_REQ_PROTOCOL, req.protocol);
  w.end();
}

/**
 * Append a SOCK_DESTROY request for exactly `s`: family, protocol and the full struct
 * inet_diag_sockid including the cookie, so a socket that replaced it is never hit. With `ack`
 * false the kernel answers only a failure (see netlink collectErrors).
 */
export function writeDestroyRequest(
  w: MessageWriter,
  seq: number,
  s: InetSocket,
  protocol: number,
  ack = true,
): void {
  w.begin(SOCK_DESTROY, ack ? NLM_F_REQUEST | NLM_F_ACK : NLM_F_REQUEST, seq);
  const o = w.reserve(INET_DIAG_REQ_V2_LEN);
  const b = w.buf;
  writeReqHeader(b, o, s.family === "inet" ? AF_INET : AF_INET6, protocol, 0, 0);
  // struct inet_diag_req_raw: a raw socket is looked up by its IP protocol too (sdiag_raw_protocol).
  if (protocol === IPPROTO_RAW) b[o + 3] = s.rawProtocol ?? 0;
  writeSockId(w.view, o + 8, s);
  if (protocol > 0xff) w.attrU32(INET_DIAG_REQ_PROTOCOL, protocol);
  w.end();
}

/**
 * One struct inet_diag_bc_op and the condition bytes after it. A test that holds goes on to the
 * next op (`yes` is always the op's own size); one that fails jumps to `no`: another op, past the
 * end ("accept"), or one op-size beyond it ("reject"). Unconditional jumps are INET_DIAG_BC_JMP ops.
 */
export interface BytecodeOp {
  code: number;
  payload: Buffer;
  no: "accept" | "reject" | BytecodeOp;
}

/** The largest program whose jumps (u16 `no`, up to length + 4) and nlattr length still fit. */
const MAX_BYTECODE = 65528;

function bytecodeOp(code: number, payload: Buffer): BytecodeOp {
  return { code, payload, no: "reject" };
}

function u32Payload(...values: number[]): Buffer {
  const b = Buffer.alloc(4 * values.length);
  for (const [i, v] of values.entries()) b.writeUInt32LE(v >>> 0, 4 * i);
  return b;
}

/** The conditions of a program, each an op that rejects when its test fails. */
export const bytecode = {
  /**
   * S_COND/D_COND + struct inet_diag_hostcond { u8 family, prefix_len; int port; be32 addr[] }:
   * `family` 0 (any address), AF_INET or AF_INET6 with its prefix words; `port` -1 for any.
   */
  host(
    side: "src" | "dst",
    family: number,
    prefixLength: number,
    port: number,
    words: readonly number[],
  ): BytecodeOp {
    const inet6 = family === AF_INET6;
    const b = Buffer.alloc(8 + (inet6 ? 16 : 4));
    b[0] = family;
    b[1] = prefixLength;
    b.writeInt32LE(port, 4);
    for (let i = 0; i < (inet6 ? 4 : 1); i++) b.writeUInt32BE(words[i] ?? 0, 8 + 4 * i);
    return bytecodeOp(side === "src" ? INET_DIAG_BC_S_COND : INET_DIAG_BC_D_COND, b);
  },
  /** A port comparison (S_GE, S_LE, D_GE, D_LE): the port rides in the `no` field of a second op. */
  port(code: number, port: number): BytecodeOp {
    const b = Buffer.alloc(4);
    b.writeUInt16LE(port, 2);
    return bytecodeOp(code, b);
  },
  dev: (ifindex: number) => bytecodeOp(INET_DIAG_BC_DEV_COND, u32Payload(ifindex)),
  mark: (mark: number, mask: number) => bytecodeOp(INET_DIAG_BC_MARK_COND, u32Payload(mark, mask)),
  cgroup(id: bigint): BytecodeOp {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(id);
    return bytecodeOp(INET_DIAG_BC_CGROUP_COND, b);
  },
  /** The socket's port was picked by the kernel (no SOCK_BINDPORT_LOCK). */
  autobound: () => bytecodeOp(INET_DIAG_BC_AUTO, Buffer.alloc(0)),
  jump: (no: BytecodeOp["no"]): BytecodeOp => ({ code: INET_DIAG_BC_JMP, payload: Buffer.alloc(0), no }),
};

/**
 * Lay `ops` out as an INET_DIAG_REQ_BYTECODE program, resolving each `no` to a byte offset;
 * undefined when the program is too long for the kernel's u16 jumps.
 */
export function layOutBytecode(ops: readonly BytecodeOp[]): Buffer | undefined {
  const offsets = new Map<BytecodeOp, number>();
  let length = 0;
  for (const op of ops) {
    offsets.set(op, length);
    length += 4 + op.payload.length;
  }
  if (length > MAX_BYTECODE) return undefined;
  const out = Buffer.alloc(length);
  for (const op of ops) {
    const at = offsets.get(op)!;
    const to = op.no === "accept" ? length : op.no === "reject" ? length + 4 : offsets.get(op.no)!;
    out[at] = op.code;
    out[at + 1] = 4 + op.payload.length;
    out.writeUInt16LE(to - at, at + 2);
    op.payload.copy(out, at + 4);
  }
  return out;
}

/** How much of an inet_diag_msg to decode. */
export interface InetDecodeOptions {
  /** The protocol the dump asked for (the message does not say). */
  protocol: InetProtocol;
  /** Decode the attributes after the fixed struct (extensions, mark, cgroup, ...); skipped otherwise. */
  attributes: boolean;
  /** The namespace the socket was listed in. */
  netns?: SocketNetns | undefined;
  /** The address texts of the previous sockets, for the next one to reuse (one per dump). */
  texts?: AddressTexts | undefined;
  /** State reused from one message to the next (one per dump); without it each call makes its own. */
  scratch?: DecodeScratch | undefined;
}

/**
 * Decode struct inet_diag_msg at buf[o, o + len) into a new InetSocket, then its attributes:
 *   __u8 idiag_family, idiag_state, idiag_timer, idiag_retrans; struct inet_diag_sockid id;
 *   __u32 idiag_expires, idiag_rqueue, idiag_wqueue, idiag_uid, idiag_inode;
 * The socket keeps nothing of `buf`, which may be reused at once. Throws DecodeError when the bytes
 * are too short or an attribute is malformed.
 */
export function decodeInetDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  options: InetDecodeOptions,
): InetSocket {
  checkInetDiagMsg(buf, o, len);
  const { scratch } = options;
  const view = scratch ? scratch.view(buf) : new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const s = new InetSocket(view, o, options.protocol, options.netns, options.texts);
  if (options.attributes && len > INET_DIAG_MSG_LEN)
    decodeInetAttributes(scratch ?? new DecodeScratch(), view, buf, o + INET_DIAG_MSG_LEN, o + len, s);
  return s;
}

/** Throws DecodeError unless `buf[o, o + len)` holds a whole struct inet_diag_msg. */
export function checkInetDiagMsg(buf: Buffer, o: number, len: number): void {
  if (len < INET_DIAG_MSG_LEN || o < 0 || o + len > buf.length) {
    throw new DecodeError("inet_diag_msg", o, `${len} bytes, needs ${INET_DIAG_MSG_LEN}`);
  }
}

function decodeInetAttributes(
  scratch: DecodeScratch,
  view: DataView,
  buf: Buffer,
  start: number,
  end: number,
  s: InetSocket,
): void {
  const a = scratch.attrs.reset(buf, start, end, "inet_diag_msg attributes");
  while (a.next()) {
    switch (a.type) {
      case INET_DIAG_MEMINFO:
        // struct inet_diag_meminfo { __u32 idiag_rmem, idiag_wmem, idiag_fmem, idiag_tmem; }
        if (a.need(16)) {
          s.meminfo = {
            rmem: buf.readUInt32LE(a.offset),
            wmem: buf.readUInt32LE(a.offset + 4),
            fmem: buf.readUInt32LE(a.offset + 8),
            tmem: buf.readUInt32LE(a.offset + 12),
          };
        }
        break;
      case INET_DIAG_SKMEMINFO:
        if (a.need(32)) s.skmem = decodeSkMemInfo(buf, a.offset, a.length);
        break;
      case INET_DIAG_INFO:
        // Only TCP and MPTCP subflows send struct tcp_info here; other protocols' INFO is left alone.
        if (s.protocol === "tcp") s.tcpinfo = decodeTcpInfo(buf, a.offset, a.length);
        break;
      case INET_DIAG_CONG:
        s.cong = a.string();
        break;
      case INET_DIAG_TOS:
        s.tos = a.u8();
        break;
      case INET_DIAG_TCLASS:
        s.tclass = a.u8();
        break;
      case INET_DIAG_SHUTDOWN:
        s.shutdown = a.u8();
        break;
      case INET_DIAG_MARK:
        s.mark = a.u32();
        break;
      case INET_DIAG_CGROUP_ID:
        if (a.need(8)) s.cgroupId = scratch.cgroupId(view, a.offset);
        break;
      case INET_DIAG_SKV6ONLY:
        s.v6only = a.u8() !== 0;
        break;
      case INET_DIAG_PROTOCOL:
        s.rawProtocol = a.u8();
        break;
    }
  }
  if (a.error) throw a.error;
}
