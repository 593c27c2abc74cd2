/**
 * sock_diag numbers: the constants of /usr/include/linux/{sock_diag,inet_diag,unix_diag}.h and
 * in.h, named as there, and the names a query speaks with the numbers they stand for — protocols
 * (how each is asked for, and the kernel module that answers for it, named in "not supported by
 * this kernel" errors), families, extensions (idiag_ext bits) and the unix_diag attributes asked for.
 */
import {
  AF_INET,
  AF_INET6,
  IPPROTO_MPTCP,
  IPPROTO_RAW,
  IPPROTO_SCTP,
  IPPROTO_TCP,
  IPPROTO_UDP,
  IPPROTO_UDPLITE,
} from "../sys/index.js";
import type { Extension, InetFamily, InetProtocol, Protocol } from "./socket.js";

export const NETLINK_SOCK_DIAG = 4;
export const SOCK_DIAG_BY_FAMILY = 20;
export const SOCK_DESTROY = 21;
// enum sknetlink_groups (linux/sock_diag.h): the kernel tells these groups of every socket it frees.
export const SKNLGRP_INET_TCP_DESTROY = 1;
export const SKNLGRP_INET_UDP_DESTROY = 2;
export const SKNLGRP_INET6_TCP_DESTROY = 3;
export const SKNLGRP_INET6_UDP_DESTROY = 4;

export { AF_INET, AF_INET6, AF_UNIX } from "../sys/index.js";

/** Request attributes (enum { INET_DIAG_REQ_NONE, ... }). */
export const INET_DIAG_REQ_BYTECODE = 1;
export const INET_DIAG_REQ_PROTOCOL = 3;

/** Response attributes (enum { INET_DIAG_NONE, ... }). */
export const INET_DIAG_MEMINFO = 1;
export const INET_DIAG_INFO = 2;
export const INET_DIAG_VEGASINFO = 3;
export const INET_DIAG_CONG = 4;
export const INET_DIAG_TOS = 5;
export const INET_DIAG_TCLASS = 6;
export const INET_DIAG_SKMEMINFO = 7;
export const INET_DIAG_SHUTDOWN = 8;
export const INET_DIAG_PROTOCOL = 10;
export const INET_DIAG_SKV6ONLY = 11;
export const INET_DIAG_MARK = 15;
export const INET_DIAG_CGROUP_ID = 21;

/** #define INET_DIAG_NOCOOKIE (~0U): both cookie words set means "do not check the cookie". */
export const INET_DIAG_NOCOOKIE = 0xffffffff;

/** Bytecode ops (enum { INET_DIAG_BC_NOP, ... }). */
export const INET_DIAG_BC_NOP = 0;
export const INET_DIAG_BC_JMP = 1;
export const INET_DIAG_BC_S_GE = 2;
export const INET_DIAG_BC_S_LE = 3;
export const INET_DIAG_BC_D_GE = 4;
export const INET_DIAG_BC_D_LE = 5;
export const INET_DIAG_BC_AUTO = 6;
export const INET_DIAG_BC_S_COND = 7;
export const INET_DIAG_BC_D_COND = 8;
export const INET_DIAG_BC_DEV_COND = 9;
export const INET_DIAG_BC_MARK_COND = 10;
export const INET_DIAG_BC_S_EQ = 11;
export const INET_DIAG_BC_D_EQ = 12;
export const INET_DIAG_BC_CGROUP_COND = 13;

/** unix_diag_req.udiag_show bits (#define UDIAG_SHOW_*). */
export const UDIAG_SHOW_NAME = 0x01;
export const UDIAG_SHOW_VFS = 0x02;
export const UDIAG_SHOW_PEER = 0x04;
export const UDIAG_SHOW_ICONS = 0x08;
export const UDIAG_SHOW_RQLEN = 0x10;
export const UDIAG_SHOW_MEMINFO = 0x20;
export const UDIAG_SHOW_UID = 0x40;

/** unix_diag attributes (enum { UNIX_DIAG_NAME, ... }): they start at 0. */
export const UNIX_DIAG_NAME = 0;
export const UNIX_DIAG_VFS = 1;
export const UNIX_DIAG_PEER = 2;
export const UNIX_DIAG_ICONS = 3;
export const UNIX_DIAG_RQLEN = 4;
export const UNIX_DIAG_MEMINFO = 5;
export const UNIX_DIAG_SHUTDOWN = 6;
export const UNIX_DIAG_UID = 7;

/** Socket states (include/net/tcp_states.h), by their number. */
export const TCP_ESTABLISHED = 1;
export const TCP_SYN_SENT = 2;
export const TCP_SYN_RECV = 3;
export const TCP_FIN_WAIT1 = 4;
export const TCP_FIN_WAIT2 = 5;
export const TCP_TIME_WAIT = 6;
export const TCP_CLOSE = 7;
export const TCP_CLOSE_WAIT = 8;
export const TCP_LAST_ACK = 9;
export const TCP_LISTEN = 10;
export const TCP_CLOSING = 11;
export const TCP_NEW_SYN_RECV = 12;
export const TCP_BOUND_INACTIVE = 13;

/** How one inet protocol is asked for, and what the kernel can do with it. */
export interface InetProtocolInfo {
  /** IPPROTO_* number sent in the request. */
  number: number;
  /** The kernel module providing its diag handler. */
  module: string;
  /** Whether SOCK_DESTROY is implemented for it (net/ipv4/{tcp,udp,raw}_diag.c). */
  destroyable: boolean;
}

/** Every inet protocol sockdiag knows, by name. */
export const INET_PROTOCOLS: Readonly<Record<InetProtocol, InetProtocolInfo>> = {
  tcp: { number: IPPROTO_TCP, module: "tcp_diag", destroyable: true },
  udp: { number: IPPROTO_UDP, module: "udp_diag", destroyable: true },
  udplite: { number: IPPROTO_UDPLITE, module: "udp_diag", destroyable: true },
  raw: { number: IPPROTO_RAW, module: "raw_diag", destroyable: true },
  mptcp: { number: IPPROTO_MPTCP, module: "mptcp_diag", destroyable: false },
  sctp: { number: IPPROTO_SCTP, module: "sctp_diag", destroyable: false },
};

/** Every protocol name a query accepts. */
export const PROTOCOL_NAMES: readonly Protocol[] = [
  "tcp",
  "udp",
  "udplite",
  "raw",
  "mptcp",
  "sctp",
  "unix",
  "packet",
  "netlink",
  "vsock",
  "tipc",
  "xdp",
];
/** Every inet family name a query accepts. */
export const FAMILY_NAMES: readonly InetFamily[] = ["inet", "inet6"];

/** AF_INET or AF_INET6 for a family name. */
export function familyNumber(family: InetFamily): number {
  return family === "inet" ? AF_INET : AF_INET6;
}

/** Whether `protocol` is an inet protocol (one of INET_PROTOCOLS), not a family of its own. */
export function isInetProtocol(protocol: Protocol): protocol is InetProtocol {
  return Object.hasOwn(INET_PROTOCOLS, protocol);
}

/** Whether `name` is a protocol name a query accepts. */
export function isProtocol(name: string): name is Protocol {
  return (PROTOCOL_NAMES as readonly string[]).includes(name);
}

/** The idiag_ext bit of each extension: 1 << (INET_DIAG_* - 1), as inet_diag.c tests them. */
export const EXTENSION_BITS: Readonly<Record<Extension, number>> = {
  meminfo: 1 << (INET_DIAG_MEMINFO - 1),
  tcpinfo: 1 << (INET_DIAG_INFO - 1),
  cong: 1 << (INET_DIAG_CONG - 1),
  tos: 1 << (INET_DIAG_TOS - 1),
  tclass: 1 << (INET_DIAG_TCLASS - 1),
  skmem: 1 << (INET_DIAG_SKMEMINFO - 1),
};

/** The extension names a query accepts. */
export const EXTENSION_NAMES = Object.keys(EXTENSION_BITS) as Extension[];

/** udiag_show for a unix dump: every attribute a unix socket reports, memory only when asked. */
export function unixShow(skmem: boolean): number {
  const always =
    UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_PEER | UDIAG_SHOW_ICONS | UDIAG_SHOW_RQLEN | UDIAG_SHOW_UID;
  return always | (skmem ? UDIAG_SHOW_MEMINFO : 0);
}
