/**
 * ctnetlink constants, named as in /usr/include/linux/netfilter/{nfnetlink,nfnetlink_conntrack,
 * nf_conntrack_common,nf_conntrack_tcp}.h.
 */

/** The netlink protocol of nfnetlink (linux/netlink.h). */
export const NETLINK_NETFILTER = 12;

/** sizeof(struct nfgenmsg): u8 nfgen_family, u8 version, __be16 res_id. */
export const NFGENMSG_LEN = 4;
export const NFNETLINK_V0 = 0;
export const NFNL_SUBSYS_CTNETLINK = 1;

/** enum cntl_msg_types. */
export const IPCTNL_MSG_CT_NEW = 0;
export const IPCTNL_MSG_CT_GET = 1;
export const IPCTNL_MSG_CT_DELETE = 2;

/** nlmsg_type of a ctnetlink message: (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_*. */
export function ctnlType(msg: number): number {
  return (NFNL_SUBSYS_CTNETLINK << 8) | msg;
}
export const CT_NEW = ctnlType(IPCTNL_MSG_CT_NEW);
export const CT_GET = ctnlType(IPCTNL_MSG_CT_GET);
export const CT_DELETE = ctnlType(IPCTNL_MSG_CT_DELETE);

/** nla_type flags (linux/netlink.h): nested attributes carry NLA_F_NESTED. */
export const NLA_F_NESTED = 0x8000;
export const NLA_F_NET_BYTEORDER = 0x4000;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

/** enum ctattr_type. */
export const CTA_TUPLE_ORIG = 1;
export const CTA_TUPLE_REPLY = 2;
export const CTA_STATUS = 3;
export const CTA_PROTOINFO = 4;
export const CTA_TIMEOUT = 7;
export const CTA_MARK = 8;
export const CTA_USE = 11;
export const CTA_ID = 12;
export const CTA_ZONE = 18;
export const CTA_MARK_MASK = 21;
export const CTA_FILTER = 25;

/** enum ctattr_tuple. */
export const CTA_TUPLE_IP = 1;
export const CTA_TUPLE_PROTO = 2;
export const CTA_TUPLE_ZONE = 3;

/** enum ctattr_ip. */
export const CTA_IP_V4_SRC = 1;
export const CTA_IP_V4_DST = 2;
export const CTA_IP_V6_SRC = 3;
export const CTA_IP_V6_DST = 4;

/** enum ctattr_l4proto. */
export const CTA_PROTO_NUM = 1;
export const CTA_PROTO_SRC_PORT = 2;
export const CTA_PROTO_DST_PORT = 3;
export const CTA_PROTO_ICMP_ID = 4;
export const CTA_PROTO_ICMP_TYPE = 5;
export const CTA_PROTO_ICMP_CODE = 6;
export const CTA_PROTO_ICMPV6_ID = 7;
export const CTA_PROTO_ICMPV6_TYPE = 8;
export const CTA_PROTO_ICMPV6_CODE = 9;

/** enum ctattr_protoinfo / ctattr_protoinfo_tcp. */
export const CTA_PROTOINFO_TCP = 1;
export const CTA_PROTOINFO_TCP_STATE = 1;

/** enum ctattr_filter, and the CTA_FILTER_FLAG_* bits naming which tuple fields to compare. */
export const CTA_FILTER_ORIG_FLAGS = 1;
export const CTA_FILTER_REPLY_FLAGS = 2;
export const CTA_FILTER_FLAG_CTA_IP_SRC = 1 << 0;
export const CTA_FILTER_FLAG_CTA_IP_DST = 1 << 1;
export const CTA_FILTER_FLAG_CTA_PROTO_NUM = 1 << 3;
export const CTA_FILTER_FLAG_CTA_PROTO_SRC_PORT = 1 << 4;
export const CTA_FILTER_FLAG_CTA_PROTO_DST_PORT = 1 << 5;

export { AF_INET, AF_INET6, AF_UNSPEC } from "../sys/index.js";

/** enum ip_conntrack_status bits, by the names conntrack-tools prints (IPS_ prefix dropped). */
export const IPS_SEEN_REPLY = 1 << 1;
export const IPS_ASSURED = 1 << 2;
export const IPS_OFFLOAD = 1 << 14;
export const IPS_HW_OFFLOAD = 1 << 15;
export const STATUS_NAMES: readonly string[] = [
  "EXPECTED",
  "SEEN_REPLY",
  "ASSURED",
  "CONFIRMED",
  "SRC_NAT",
  "DST_NAT",
  "SEQ_ADJUST",
  "SRC_NAT_DONE",
  "DST_NAT_DONE",
  "DYING",
  "FIXED_TIMEOUT",
  "TEMPLATE",
  "UNTRACKED",
  "HELPER",
  "OFFLOAD",
  "HW_OFFLOAD",
];

/** enum tcp_conntrack, by the names conntrack -L prints. */
export const TCP_CONNTRACK_NAMES: readonly string[] = [
  "NONE",
  "SYN_SENT",
  "SYN_RECV",
  "ESTABLISHED",
  "FIN_WAIT",
  "CLOSE_WAIT",
  "LAST_ACK",
  "TIME_WAIT",
  "CLOSE",
  "SYN_SENT2",
];
