/**
 * The conntrack entry model and its decoder: one IPCTNL_MSG_CT_NEW message of a dump (struct
 * nfgenmsg, then nested attributes) into a plain ConntrackEntry. The decoder also remembers where
 * the message's CTA_TUPLE_ORIG lies, so a delete can send the kernel's own tuple back byte for byte.
 */
import { formatIPv4, formatIPv6 } from "../diag/address.js";
import { AttributeReader, DecodeError } from "../netlink/index.js";
import { be16, be32 } from "./attributes.js";
import * as ct from "./constants.js";
import { protocolName } from "./protocols.js";

/** One direction of a connection: addresses, and the protocol's ports or ICMP fields. */
export interface ConntrackTuple {
  src: string;
  dst: string;
  /** Source and destination port (TCP, UDP, UDP-Lite, SCTP, DCCP; GRE keys). */
  sport?: number;
  dport?: number;
  icmpType?: number;
  icmpCode?: number;
  icmpId?: number;
}

/** One connection-tracking entry, as ctnetlink lists it. Plain data: structuredClone keeps it whole. */
export interface ConntrackEntry {
  /** The label of the network namespace it was listed in (undefined: the caller's own). */
  netns?: string | undefined;
  family: "inet" | "inet6";
  /** Protocol name ("udp", "tcp", "icmp", ...; "unknown" for others) and number. */
  protocol: string;
  protocolNumber: number;
  /** The tuple of the first packet (CTA_TUPLE_ORIG) and of the answers (CTA_TUPLE_REPLY). */
  original: ConntrackTuple;
  reply: ConntrackTuple;
  /** The TCP state ("ESTABLISHED", "TIME_WAIT", ...), for TCP entries only. */
  state?: string;
  /** CTA_STATUS bits, and their names ("SEEN_REPLY", "ASSURED", "DST_NAT", ...). */
  status: number;
  flags: string[];
  /** Seconds left before the entry expires. */
  timeout: number;
  mark: number;
  zone: number;
  /** The kernel's id of the entry (CTA_ID): a new entry reusing the tuple has another. */
  id: number;
  /** Reference count (CTA_USE), as conntrack -L prints it. */
  use: number;
}

/** Where some bytes lie in a buffer. */
export interface ByteSpan {
  offset: number;
  length: number;
}

/** Where the last decoded entry lies: its message payload, and its CTA_TUPLE_ORIG (header included). */
export interface EntrySpans {
  readonly message: ByteSpan;
  readonly origTuple: ByteSpan;
}

/**
 * EntryDecoder turns dump messages into entries. One instance per dump: it reuses its attribute
 * readers (one per nesting level), so decoding allocates only the entry itself.
 */
export class EntryDecoder {
  private readonly top = new AttributeReader();
  private readonly tuple = new AttributeReader();
  private readonly inner = new AttributeReader();
  private readonly deepest = new AttributeReader();
  /** The last decoded entry's bytes, for holding it and building its delete request. */
  readonly spans: EntrySpans = { message: { offset: 0, length: 0 }, origTuple: { offset: 0, length: 0 } };

  /**
   * Decode the message payload buf[offset, offset+length) (nfgenmsg + attributes). Throws
   * DecodeError when it is malformed or lacks its tuples.
   */
  decode(buf: Buffer, offset: number, length: number, netns?: string): ConntrackEntry {
    if (length < ct.NFGENMSG_LEN) throw new DecodeError("nfgenmsg", offset, `${length} bytes, needs 4`);
    const af = buf[offset]!;
    if (af !== ct.AF_INET && af !== ct.AF_INET6)
      throw new DecodeError("nfgenmsg", offset, `address family ${af} is not AF_INET or AF_INET6`);
    const entry: ConntrackEntry = {
      netns,
      family: af === ct.AF_INET ? "inet" : "inet6",
      protocol: "",
      protocolNumber: 0,
      original: EMPTY_TUPLE,
      reply: EMPTY_TUPLE,
      status: 0,
      flags: [],
      timeout: 0,
      mark: 0,
      zone: 0,
      id: 0,
      use: 0,
    };
    const { message, origTuple } = this.spans;
    message.offset = offset;
    message.length = length;
    origTuple.length = 0;
    const r = this.top.reset(buf, offset + ct.NFGENMSG_LEN, offset + length, "ctnetlink message");
    while (r.next()) {
      switch (r.type) {
        case ct.CTA_TUPLE_ORIG:
          entry.original = this.readTuple(r, entry);
          origTuple.offset = r.offset - 4;
          origTuple.length = r.length + 4;
          break;
        case ct.CTA_TUPLE_REPLY:
          entry.reply = this.readTuple(r, entry);
          break;
        case ct.CTA_ZONE:
          entry.zone = be16(r);
          break;
        case ct.CTA_PROTOINFO:
          this.readProtoinfo(r, entry);
          break;
        default: {
          const field = U32_FIELDS[r.type];
          if (field) entry[field] = be32(r);
        }
      }
    }
    if (r.error) throw r.error;
    if (entry.original === EMPTY_TUPLE || entry.reply === EMPTY_TUPLE)
      throw new DecodeError("ctnetlink message", offset, "an entry without both tuples");
    entry.flags = statusFlags(entry.status);
    return entry;
  }

  private readTuple(outer: AttributeReader, entry: ConntrackEntry): ConntrackTuple {
    const t: ConntrackTuple = { src: "", dst: "" };
    const r = this.tuple.reset(outer.buf, outer.offset, outer.offset + outer.length, "conntrack tuple");
    while (r.next()) {
      if (r.type === ct.CTA_TUPLE_IP) this.readIp(r, t);
      else if (r.type === ct.CTA_TUPLE_PROTO) this.readProto(r, t, entry);
      else if (r.type === ct.CTA_TUPLE_ZONE && entry.zone === 0) entry.zone = be16(r);
    }
    if (r.error) throw r.error;
    if (t.src === "" || t.dst === "")
      throw new DecodeError("conntrack tuple", outer.offset, "a tuple without both addresses");
    return t;
  }

  private readIp(outer: AttributeReader, t: ConntrackTuple): void {
    const r = this.inner.reset(outer.buf, outer.offset, outer.offset + outer.length, "CTA_TUPLE_IP");
    while (r.next()) {
      if (r.type === ct.CTA_IP_V4_SRC) t.src = ipv4(r);
      else if (r.type === ct.CTA_IP_V6_SRC) t.src = ipv6(r);
      else if (r.type === ct.CTA_IP_V4_DST) t.dst = ipv4(r);
      else if (r.type === ct.CTA_IP_V6_DST) t.dst = ipv6(r);
    }
    if (r.error) throw r.error;
  }

  private readProto(outer: AttributeReader, t: ConntrackTuple, entry: ConntrackEntry): void {
    const r = this.inner.reset(outer.buf, outer.offset, outer.offset + outer.length, "CTA_TUPLE_PROTO");
    while (r.next()) {
      switch (r.type) {
        case ct.CTA_PROTO_NUM:
          entry.protocolNumber = r.u8();
          entry.protocol = protocolName(entry.protocolNumber);
          break;
        case ct.CTA_PROTO_SRC_PORT:
          t.sport = be16(r);
          break;
        case ct.CTA_PROTO_DST_PORT:
          t.dport = be16(r);
          break;
        case ct.CTA_PROTO_ICMP_ID:
        case ct.CTA_PROTO_ICMPV6_ID:
          t.icmpId = be16(r);
          break;
        case ct.CTA_PROTO_ICMP_TYPE:
        case ct.CTA_PROTO_ICMPV6_TYPE:
          t.icmpType = r.u8();
          break;
        case ct.CTA_PROTO_ICMP_CODE:
        case ct.CTA_PROTO_ICMPV6_CODE:
          t.icmpCode = r.u8();
          break;
      }
    }
    if (r.error) throw r.error;
  }

  private readProtoinfo(outer: AttributeReader, entry: ConntrackEntry): void {
    const r = this.inner.reset(outer.buf, outer.offset, outer.offset + outer.length, "CTA_PROTOINFO");
    while (r.next()) {
      if (r.type !== ct.CTA_PROTOINFO_TCP) continue;
      const d = this.deepest.reset(r.buf, r.offset, r.offset + r.length, "CTA_PROTOINFO_TCP");
      while (d.next()) {
        if (d.type === ct.CTA_PROTOINFO_TCP_STATE) {
          const s = d.u8();
          entry.state = ct.TCP_CONNTRACK_NAMES[s] ?? `STATE_${s}`;
        }
      }
      if (d.error) throw d.error;
    }
    if (r.error) throw r.error;
  }
}

const EMPTY_TUPLE: ConntrackTuple = Object.freeze({ src: "", dst: "" });

/** The entry's big-endian u32 fields, by their top-level attribute type. */
const U32_FIELDS: Readonly<Partial<Record<number, "status" | "timeout" | "mark" | "id" | "use">>> = {
  [ct.CTA_STATUS]: "status",
  [ct.CTA_TIMEOUT]: "timeout",
  [ct.CTA_MARK]: "mark",
  [ct.CTA_ID]: "id",
  [ct.CTA_USE]: "use",
};

function ipv4(r: AttributeReader): string {
  return r.need(4) ? formatIPv4(r.buf.readUInt32BE(r.offset)) : "";
}

function ipv6(r: AttributeReader): string {
  if (!r.need(16)) return "";
  const b = r.buf;
  const o = r.offset;
  return formatIPv6(b.readUInt32BE(o), b.readUInt32BE(o + 4), b.readUInt32BE(o + 8), b.readUInt32BE(o + 12));
}

/** The names of the status bits set in `status`, lowest bit first. */
export function statusFlags(status: number): string[] {
  const names: string[] = [];
  for (let bit = 0; bit < ct.STATUS_NAMES.length; bit++)
    if (status & (1 << bit)) names.push(ct.STATUS_NAMES[bit]!);
  return names;
}
