/** Netlink constants, named as in /usr/include/linux/netlink.h. */

/** sizeof(struct nlmsghdr): u32 len, u16 type, u16 flags, u32 seq, u32 pid. */
export const NLMSG_HDRLEN = 16;
/** sizeof(struct nlmsgerr) without the echoed header: int error, then the request's nlmsghdr. */
export const NLMSGERR_LEN = 4 + NLMSG_HDRLEN;
/** sizeof(struct nlattr) / struct rtattr: u16 len, u16 type. */
export const NLA_HDRLEN = 4;

export const NLMSG_NOOP = 1;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLMSG_OVERRUN = 4;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;

export const SOL_NETLINK = 270;
/** Acks carry only the request's header, not its payload: keeps a batch's acks small. */
export const NETLINK_CAP_ACK = 10;
export const NETLINK_EXT_ACK = 11;
export const NETLINK_GET_STRICT_CHK = 12;

/** #define NLMSG_ALIGN(len) (((len)+NLMSG_ALIGNTO-1) & ~(NLMSG_ALIGNTO-1)), NLMSG_ALIGNTO = 4; NLA_ALIGN is the same. */
export function align4(len: number): number {
  return (len + 3) & ~3;
}
