/**
 * The protocols sockdiag can list: how each is asked for in sock_diag, and the kernel module that
 * answers for it (named in "not supported by this kernel" errors).
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
} from "../diag/constants.js";
import type { InetFamily, InetProtocol, Protocol } from "../diag/socket.js";

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
