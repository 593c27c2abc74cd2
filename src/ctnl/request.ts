/**
 * ctnetlink requests: the dump (IPCTNL_MSG_CT_GET with NLM_F_DUMP, filtered in the kernel where it
 * can be) and the delete of one entry (IPCTNL_MSG_CT_DELETE). A DELETE without a tuple flushes the
 * whole table, so this module is the only writer of DELETE messages, it writes one only around a
 * checked tuple, and `assertNoFlush` checks a whole batch again before it is sent.
 */
import {
  AttributeReader,
  align4,
  copyBytes,
  type MessageWriter,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  NLMSG_HDRLEN,
  MessageWriter as Writer,
} from "../netlink/index.js";
import { beginNest, endNest, putBe16, putBe32, putBytes, putU8, putU32 } from "./attributes.js";
import {
  AF_INET,
  AF_INET6,
  CT_DELETE,
  CT_GET,
  CTA_FILTER,
  CTA_FILTER_FLAG_CTA_IP_DST,
  CTA_FILTER_FLAG_CTA_IP_SRC,
  CTA_FILTER_FLAG_CTA_PROTO_DST_PORT,
  CTA_FILTER_FLAG_CTA_PROTO_NUM,
  CTA_FILTER_FLAG_CTA_PROTO_SRC_PORT,
  CTA_FILTER_ORIG_FLAGS,
  CTA_FILTER_REPLY_FLAGS,
  CTA_ID,
  CTA_IP_V4_DST,
  CTA_IP_V4_SRC,
  CTA_IP_V6_DST,
  CTA_IP_V6_SRC,
  CTA_MARK,
  CTA_MARK_MASK,
  CTA_PROTO_DST_PORT,
  CTA_PROTO_NUM,
  CTA_PROTO_SRC_PORT,
  CTA_TUPLE_IP,
  CTA_TUPLE_ORIG,
  CTA_TUPLE_PROTO,
  CTA_TUPLE_REPLY,
  CTA_ZONE,
  NFGENMSG_LEN,
  NFNETLINK_V0,
} from "./constants.js";
import { FlushGuardError } from "./errors.js";
import { CT_PROTOCOLS } from "./protocols.js";

/** The fields of one tuple the kernel is asked to compare (addresses as 4 or 16 bytes). */
export interface TupleFilter {
  src?: Uint8Array;
  dst?: Uint8Array;
  sport?: number;
  dport?: number;
}

/**
 * What a dump asks the kernel to select. `family` AF_UNSPEC lists both families; addresses need
 * a family. Ports need `protocol` (the kernel compares ports only within a protocol).
 */
export interface DumpFilter {
  family: number;
  protocol?: number;
  orig?: TupleFilter;
  reply?: TupleFilter;
  mark?: { value: number; mask: number };
  zone?: number;
}

function writeNfgenmsg(w: MessageWriter, family: number): void {
  const at = w.reserve(NFGENMSG_LEN);
  w.buf[at] = family;
  w.buf[at + 1] = NFNETLINK_V0;
}

/** CTA_FILTER_FLAG_* bits for the fields `t` sets; ports count only with a protocol. */
function filterFlags(t: TupleFilter | undefined, protocol: number | undefined): number {
  if (!t) return 0;
  let flags = 0;
  if (t.src) flags |= CTA_FILTER_FLAG_CTA_IP_SRC;
  if (t.dst) flags |= CTA_FILTER_FLAG_CTA_IP_DST;
  if (protocol !== undefined) {
    flags |= CTA_FILTER_FLAG_CTA_PROTO_NUM;
    if (t.sport !== undefined) flags |= CTA_FILTER_FLAG_CTA_PROTO_SRC_PORT;
    if (t.dport !== undefined) flags |= CTA_FILTER_FLAG_CTA_PROTO_DST_PORT;
  }
  return flags;
}

function writeFilterTuple(
  w: MessageWriter,
  type: number,
  family: number,
  protocol: number | undefined,
  t: TupleFilter,
): void {
  const nest = beginNest(w, type);
  if (t.src || t.dst) {
    const ip = beginNest(w, CTA_TUPLE_IP);
    const v6 = family === AF_INET6;
    if (t.src) putBytes(w, v6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC, t.src);
    if (t.dst) putBytes(w, v6 ? CTA_IP_V6_DST : CTA_IP_V4_DST, t.dst);
    endNest(w, ip);
  }
  if (protocol !== undefined) {
    const proto = beginNest(w, CTA_TUPLE_PROTO);
    putU8(w, CTA_PROTO_NUM, protocol);
    if (t.sport !== undefined) putBe16(w, CTA_PROTO_SRC_PORT, t.sport);
    if (t.dport !== undefined) putBe16(w, CTA_PROTO_DST_PORT, t.dport);
    endNest(w, proto);
  }
  endNest(w, nest);
}

/**
 * Write a dump request. The kernel (Linux 5.8+) selects by CTA_FILTER: for each tuple, the flags
 * name the fields to compare and the tuple holds their values; a protocol alone is compared through
 * the original tuple. Older kernels ignore CTA_FILTER and send everything, which the caller's
 * user-space check sorts out. CTA_MARK/CTA_MARK_MASK select by mark on every kernel since 2.6.
 */
export function writeDumpRequest(w: MessageWriter, seq: number, filter: DumpFilter): void {
  w.begin(CT_GET, NLM_F_REQUEST | NLM_F_DUMP, seq);
  writeNfgenmsg(w, filter.family);
  if (filter.mark) {
    putBe32(w, CTA_MARK, filter.mark.value);
    putBe32(w, CTA_MARK_MASK, filter.mark.mask);
  }
  const { protocol } = filter;
  const orig = filter.orig ?? (protocol !== undefined && !filter.reply ? {} : undefined);
  const origFlags = filterFlags(orig, protocol);
  const replyFlags = filterFlags(filter.reply, protocol);
  if (origFlags !== 0 || replyFlags !== 0) {
    if (filter.zone !== undefined) putBe16(w, CTA_ZONE, filter.zone);
    const nest = beginNest(w, CTA_FILTER);
    if (origFlags) putU32(w, CTA_FILTER_ORIG_FLAGS, origFlags);
    if (replyFlags) putU32(w, CTA_FILTER_REPLY_FLAGS, replyFlags);
    endNest(w, nest);
    if (origFlags && orig) writeFilterTuple(w, CTA_TUPLE_ORIG, filter.family, protocol, orig);
    if (replyFlags && filter.reply)
      writeFilterTuple(w, CTA_TUPLE_REPLY, filter.family, protocol, filter.reply);
  }
  w.end();
}

/**
 * Write the DELETE of one entry: its original tuple exactly as the kernel listed it (bytes
 * tuple[offset, offset+length), header included), its id (the kernel answers ENOENT when the tuple
 * now belongs to another entry), and its zone. By default sent without NLM_F_ACK: only failures
 * are answered. Throws FlushGuardError, writing nothing, when the tuple is not a complete CTA_TUPLE_ORIG.
 */
export function writeDeleteRequest(
  w: MessageWriter,
  seq: number,
  family: number,
  tuple: Buffer,
  offset: number,
  length: number,
  id: number,
  zone: number,
  flags = NLM_F_REQUEST,
): void {
  checkTuple(tuple, offset, length, family, CTA_TUPLE_ORIG);
  const start = w.length;
  try {
    w.begin(CT_DELETE, flags, seq);
    writeNfgenmsg(w, family);
    const at = w.reserve(align4(length));
    copyBytes(tuple, offset, offset + length, w.buf, at);
    putBe32(w, CTA_ID, id);
    if (zone !== 0) putBe16(w, CTA_ZONE, zone);
    w.end();
  } catch (err) {
    w.length = start;
    throw err;
  }
}

/**
 * Write, with NLM_F_ACK, the DELETE of an entry that cannot exist (UDP 0.0.0.0:0 -> 0.0.0.0:0,
 * id 0), through writeDeleteRequest's checks: the kernel answers ENOENT where this caller may
 * delete entries, EPERM where it may not (nfnetlink wants CAP_NET_ADMIN for every request).
 */
export function writeProbeDelete(w: MessageWriter, seq: number): void {
  const tuple = new Writer(Buffer.alloc(64));
  const any = new Uint8Array(4);
  writeFilterTuple(tuple, CTA_TUPLE_ORIG, AF_INET, CT_PROTOCOLS.udp, {
    src: any,
    dst: any,
    sport: 0,
    dport: 0,
  });
  // With NLM_F_ACK: an answer also where the kernel deletes.
  writeDeleteRequest(w, seq, AF_INET, tuple.buf, 0, tuple.length, 0, 0, NLM_F_REQUEST | NLM_F_ACK);
}

/** checkTuple's readers, reused: it runs twice for every entry deleted. */
const tupleReader = new AttributeReader();
const innerReader = new AttributeReader();

/**
 * Throw FlushGuardError unless buf[offset, offset+length) is one attribute of type `type`
 * (CTA_TUPLE_ORIG or CTA_TUPLE_REPLY) holding CTA_TUPLE_IP with both addresses of `family`, and
 * CTA_TUPLE_PROTO with CTA_PROTO_NUM.
 */
export function checkTuple(buf: Buffer, offset: number, length: number, family: number, type: number): void {
  if (family !== AF_INET && family !== AF_INET6) throw new FlushGuardError(`address family ${family}`);
  const addrLen = family === AF_INET ? 4 : 16;
  const srcType = family === AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC;
  const dstType = family === AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST;
  if (length < 4 || offset < 0 || offset + length > buf.length || buf.readUInt16LE(offset) !== length)
    throw new FlushGuardError("no tuple attribute");
  if ((buf.readUInt16LE(offset + 2) & 0x3fff) !== type) throw new FlushGuardError("not a tuple attribute");
  let src = false;
  let dst = false;
  let proto = false;
  const r = tupleReader.reset(buf, offset + 4, offset + length, "conntrack tuple");
  const ipReader = innerReader;
  while (r.next()) {
    if (r.type === CTA_TUPLE_IP) {
      const ip = ipReader.reset(buf, r.offset, r.offset + r.length, "CTA_TUPLE_IP");
      while (ip.next()) {
        if (ip.type === srcType && ip.length === addrLen) src = true;
        if (ip.type === dstType && ip.length === addrLen) dst = true;
      }
    } else if (r.type === CTA_TUPLE_PROTO) {
      const p = ipReader.reset(buf, r.offset, r.offset + r.length, "CTA_TUPLE_PROTO");
      while (p.next()) if (p.type === CTA_PROTO_NUM && p.length >= 1) proto = true;
    }
  }
  if (r.error) throw new FlushGuardError(r.error.message);
  if (!src || !dst) throw new FlushGuardError("the tuple lacks its source or destination address");
  if (!proto) throw new FlushGuardError("the tuple lacks its protocol number");
}

/**
 * Walk the messages in buf[0, length) and throw FlushGuardError if any DELETE among them does not
 * carry a complete tuple. Run on every batch just before it is sent.
 */
export function assertNoFlush(buf: Buffer, length: number): void {
  for (let o = 0; o < length; ) {
    const len = length - o >= NLMSG_HDRLEN ? buf.readUInt32LE(o) : 0;
    if (len < NLMSG_HDRLEN || o + len > length) throw new FlushGuardError(`malformed batch at byte ${o}`);
    if (buf.readUInt16LE(o + 4) === CT_DELETE) checkDeleteMessage(buf, o, len);
    o += align4(len);
  }
}

function checkDeleteMessage(buf: Buffer, start: number, len: number): void {
  if (len < NLMSG_HDRLEN + NFGENMSG_LEN) throw new FlushGuardError("a DELETE without nfgenmsg");
  const family = buf[start + NLMSG_HDRLEN]!;
  const end = start + len;
  let o = start + NLMSG_HDRLEN + NFGENMSG_LEN;
  while (o + 4 <= end) {
    const alen = buf.readUInt16LE(o);
    if (alen < 4 || o + alen > end) break;
    const type = buf.readUInt16LE(o + 2) & 0x3fff;
    if (type === CTA_TUPLE_ORIG || type === CTA_TUPLE_REPLY) {
      checkTuple(buf, o, alen, family, type);
      return;
    }
    o += align4(alen);
  }
  throw new FlushGuardError("a DELETE without a tuple");
}
