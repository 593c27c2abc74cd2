/**
 * An independent test builder for ctnetlink messages, transcribed from
 * /usr/include/linux/netfilter/{nfnetlink,nfnetlink_conntrack}.h: attribute numbers are written
 * out here again (not imported from src/ctnl), nests carry NLA_F_NESTED as the kernel sets it, and
 * integers are big-endian. Tests build expected bytes and kernel-like answers with it; the kit
 * builds the entries it creates in real kernels with it.
 */
import { isIPv4 } from "node:net";
import { nlattr, nlmsg } from "../diag/layout.js";

const NLA_F_NESTED = 0x8000;

/** Attribute numbers (enum ctattr_type, ctattr_tuple, ctattr_ip, ctattr_l4proto, ctattr_filter). */
export const A = {
  TUPLE_ORIG: 1,
  TUPLE_REPLY: 2,
  STATUS: 3,
  PROTOINFO: 4,
  TIMEOUT: 7,
  MARK: 8,
  USE: 11,
  ID: 12,
  ZONE: 18,
  MARK_MASK: 21,
  FILTER: 25,
  TUPLE_IP: 1,
  TUPLE_PROTO: 2,
  TUPLE_ZONE: 3,
  IP_V4_SRC: 1,
  IP_V4_DST: 2,
  IP_V6_SRC: 3,
  IP_V6_DST: 4,
  PROTO_NUM: 1,
  PROTO_SRC_PORT: 2,
  PROTO_DST_PORT: 3,
  PROTO_ICMP_ID: 4,
  PROTO_ICMP_TYPE: 5,
  PROTO_ICMP_CODE: 6,
  PROTO_ICMPV6_ID: 7,
  PROTO_ICMPV6_TYPE: 8,
  PROTO_ICMPV6_CODE: 9,
  PROTOINFO_TCP: 1,
  PROTOINFO_TCP_STATE: 1,
  FILTER_ORIG_FLAGS: 1,
  FILTER_REPLY_FLAGS: 2,
} as const;

/**
 * nlmsg_type values: (NFNL_SUBSYS_CTNETLINK = 1) << 8 | IPCTNL_MSG_CT_{NEW 0, GET 1, DELETE 2,
 * GET_STATS 5}.
 */
export const T = { NEW: 0x100, GET: 0x101, DELETE: 0x102, GET_STATS: 0x105 } as const;

/** enum ctattr_stats_global. */
export const STATS = { ENTRIES: 1, MAX_ENTRIES: 2 } as const;

export const be16 = (v: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
};
export const be32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};
export const u8 = (v: number): Buffer => Buffer.from([v]);

/** A nested attribute: NLA_F_NESTED set, children concatenated. */
export function nest(type: number, ...children: Buffer[]): Buffer {
  return nlattr(type | NLA_F_NESTED, Buffer.concat(children));
}

/** struct nfgenmsg { __u8 nfgen_family; __u8 version; __be16 res_id; }. */
export function nfgenmsg(family: number): Buffer {
  return Buffer.from([family, 0, 0, 0]);
}

/**
 * The kernel's answer to CT_GET_STATS (ctnetlink_stat_ct_fill_info): nfgenmsg AF_UNSPEC, then the
 * namespace's entry count and the table's maximum, both be32.
 */
export function statsMessage(entries: number, seq: number, max = 262144): Buffer {
  return nlmsg(
    { type: T.GET_STATS, flags: 0, seq },
    nfgenmsg(0),
    nlattr(STATS.ENTRIES, be32(entries)),
    nlattr(STATS.MAX_ENTRIES, be32(max)),
  );
}

/** The bytes of an address: 4 for IPv4 text, 16 for IPv6 text (expanded by hand). */
export function addressBytes(text: string): Buffer {
  if (isIPv4(text)) return Buffer.from(text.split(".").map(Number));
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const groups = (s: string | undefined) => (s ? s.split(":") : []);
  const expand = (gs: string[]) =>
    gs.flatMap((g) => {
      if (g.includes(".")) return [...Buffer.from(g.split(".").map(Number))];
      const n = Number.parseInt(g, 16);
      return [n >> 8, n & 255];
    });
  const h = expand(groups(head));
  const t = expand(groups(tail));
  return Buffer.from([...h, ...new Array(16 - h.length - t.length).fill(0), ...t]);
}

/** One tuple of a test entry: ports, or (ICMP, ICMPv6) type, code and id. */
export interface TestTuple {
  src: string;
  dst: string;
  sport?: number;
  dport?: number;
  icmp?: { type: number; code: number; id: number };
}

/** CTA_TUPLE_* { CTA_TUPLE_IP { src, dst }, CTA_TUPLE_PROTO { num, ports or ICMP fields } }. */
export function tuple(type: number, proto: number, t: TestTuple): Buffer {
  const v6 = !isIPv4(t.src);
  const ports: Buffer[] = [];
  if (t.sport !== undefined) ports.push(nlattr(A.PROTO_SRC_PORT, be16(t.sport)));
  if (t.dport !== undefined) ports.push(nlattr(A.PROTO_DST_PORT, be16(t.dport)));
  if (t.icmp) {
    const [id, icmpType, code] =
      proto === 58
        ? [A.PROTO_ICMPV6_ID, A.PROTO_ICMPV6_TYPE, A.PROTO_ICMPV6_CODE]
        : [A.PROTO_ICMP_ID, A.PROTO_ICMP_TYPE, A.PROTO_ICMP_CODE];
    ports.push(nlattr(id, be16(t.icmp.id)), nlattr(icmpType, u8(t.icmp.type)), nlattr(code, u8(t.icmp.code)));
  }
  return nest(
    type,
    nest(
      A.TUPLE_IP,
      nlattr(v6 ? A.IP_V6_SRC : A.IP_V4_SRC, addressBytes(t.src)),
      nlattr(v6 ? A.IP_V6_DST : A.IP_V4_DST, addressBytes(t.dst)),
    ),
    nest(A.TUPLE_PROTO, nlattr(A.PROTO_NUM, u8(proto)), ...ports),
  );
}

/** A test entry: what the kit creates and what fake dumps answer. */
export interface TestEntry {
  proto: number;
  orig: TestTuple;
  reply?: TestTuple;
  timeout?: number;
  status?: number;
  mark?: number;
  zone?: number;
  id?: number;
  tcpState?: number;
}

/** The answer to an ICMP / ICMPv6 echo request (the kernel's invmap, for the types tests use). */
const ECHO_REPLY: Record<number, number> = { 8: 0, 128: 129 };

/** The reply tuple of an entry without NAT: the original turned around. */
export function reversed(t: TestTuple): TestTuple {
  return {
    src: t.dst,
    dst: t.src,
    ...(t.icmp ? { icmp: { ...t.icmp, type: ECHO_REPLY[t.icmp.type] ?? t.icmp.type } } : {}),
    ...(t.dport !== undefined ? { sport: t.dport } : {}),
    ...(t.sport !== undefined ? { dport: t.sport } : {}),
  };
}

/** The attributes of an entry, in the order the kernel's ctnetlink_fill_info sends them. */
export function entryAttributes(e: TestEntry): Buffer[] {
  const attrs = [
    tuple(A.TUPLE_ORIG, e.proto, e.orig),
    tuple(A.TUPLE_REPLY, e.proto, e.reply ?? reversed(e.orig)),
  ];
  if (e.zone !== undefined) attrs.push(nlattr(A.ZONE, be16(e.zone)));
  if (e.status !== undefined) attrs.push(nlattr(A.STATUS, be32(e.status)));
  if (e.timeout !== undefined) attrs.push(nlattr(A.TIMEOUT, be32(e.timeout)));
  if (e.mark !== undefined) attrs.push(nlattr(A.MARK, be32(e.mark)));
  if (e.tcpState !== undefined)
    attrs.push(nest(A.PROTOINFO, nest(A.PROTOINFO_TCP, nlattr(A.PROTOINFO_TCP_STATE, u8(e.tcpState)))));
  if (e.id !== undefined) attrs.push(nlattr(A.ID, be32(e.id)));
  return attrs;
}

/** The family byte of an entry. */
export function familyOf(e: TestEntry): number {
  return isIPv4(e.orig.src) ? 2 : 10;
}

/** A dump answer message carrying `e` (IPCTNL_MSG_CT_NEW, NLM_F_MULTI). */
export function entryMessage(e: TestEntry, seq: number): Buffer {
  return nlmsg({ type: T.NEW, flags: 0x2, seq }, nfgenmsg(familyOf(e)), ...entryAttributes(e));
}

/** The payload (nfgenmsg + attributes) of a message carrying `e`. */
export function entryPayload(e: TestEntry): Buffer {
  return Buffer.concat([nfgenmsg(familyOf(e)), ...entryAttributes(e)]);
}
