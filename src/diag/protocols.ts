/**
 * The names a query speaks and the sock_diag numbers they stand for: protocols (how each is asked
 * for, and the kernel module that answers for it, named in "not supported by this kernel" errors),
 * families, extensions (idiag_ext bits) and the unix_diag attributes asked for.
 */

import {
  IPPROTO_MPTCP,
  IPPROTO_RAW,
  IPPROTO_SCTP,
  IPPROTO_TCP,
  IPPROTO_UDP,
  IPPROTO_UDPLITE,
} from "../sys/socket.js";
import {
  AF_INET,
  AF_INET6,
  INET_DIAG_CONG,
  INET_DIAG_INFO,
  INET_DIAG_MEMINFO,
  INET_DIAG_SKMEMINFO,
  INET_DIAG_TCLASS,
  INET_DIAG_TOS,
  UDIAG_SHOW_ICONS,
  UDIAG_SHOW_MEMINFO,
  UDIAG_SHOW_NAME,
  UDIAG_SHOW_PEER,
  UDIAG_SHOW_RQLEN,
  UDIAG_SHOW_UID,
  UDIAG_SHOW_VFS,
} from "./constants.js";
import type { Extension, InetFamily, InetProtocol, Protocol } from "./socket.js";

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
export const PROTOCOL_NAMES: readonly Protocol[] = ["tcp", "udp", "udplite", "raw", "mptcp", "sctp", "unix"];
/** Every inet family name a query accepts. */
export const FAMILY_NAMES: readonly InetFamily[] = ["inet", "inet6"];

/** AF_INET or AF_INET6 for a family name. */
export function familyNumber(family: InetFamily): number {
  return family === "inet" ? AF_INET : AF_INET6;
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
