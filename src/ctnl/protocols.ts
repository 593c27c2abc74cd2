/** Layer-4 protocol names conntrack knows, as conntrack-tools prints them. */
import {
  IPPROTO_DCCP,
  IPPROTO_GRE,
  IPPROTO_ICMP,
  IPPROTO_ICMPV6,
  IPPROTO_SCTP,
  IPPROTO_TCP,
  IPPROTO_UDP,
  IPPROTO_UDPLITE,
} from "../sys/index.js";

/** Protocol name -> IP protocol number. */
export const CT_PROTOCOLS: Readonly<Record<string, number>> = {
  tcp: IPPROTO_TCP,
  udp: IPPROTO_UDP,
  udplite: IPPROTO_UDPLITE,
  icmp: IPPROTO_ICMP,
  icmpv6: IPPROTO_ICMPV6,
  sctp: IPPROTO_SCTP,
  dccp: IPPROTO_DCCP,
  gre: IPPROTO_GRE,
};

const NAMES = new Map(Object.entries(CT_PROTOCOLS).map(([name, n]) => [n, name]));

/** The name of IP protocol `n`, "unknown" for one conntrack tracks generically. */
export function protocolName(n: number): string {
  return NAMES.get(n) ?? "unknown";
}

/** Whether entries of protocol `n` have ports in their tuples (CTA_PROTO_SRC_PORT/DST_PORT). */
export function hasPorts(n: number): boolean {
  return (
    n === IPPROTO_TCP ||
    n === IPPROTO_UDP ||
    n === IPPROTO_UDPLITE ||
    n === IPPROTO_SCTP ||
    n === IPPROTO_DCCP
  );
}
