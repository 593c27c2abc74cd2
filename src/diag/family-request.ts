/**
 * The dump requests of the sock_diag families beyond inet and unix, each its header's struct:
 * packet_diag_req, netlink_diag_req and xdp_diag_req share one layout; vsock_diag_req carries
 * states like unix_diag_req; tipc_sock_diag_req is states only. The kernel finds the handler by
 * sdiag_family and answers ENOENT when it has none (net/core/sock_diag.c).
 */
import { type MessageWriter, NLM_F_DUMP, NLM_F_REQUEST } from "../netlink/index.js";
import { AF_NETLINK, AF_PACKET, AF_TIPC, AF_VSOCK, AF_XDP } from "../sys/index.js";
import { INET_PROTOCOLS, isInetProtocol, SOCK_DIAG_BY_FAMILY } from "./constants.js";
import type { Protocol } from "./socket.js";

/** The families asked for with these requests, by their sockdiag protocol names. */
export type FamilyProtocol = "packet" | "netlink" | "vsock" | "tipc" | "xdp";

/** sdiag_family of each, and the kernel module that answers for it (named in "not supported" errors). */
export const FAMILY_PROTOCOLS: Readonly<Record<FamilyProtocol, { family: number; module: string }>> = {
  packet: { family: AF_PACKET, module: "af_packet_diag" },
  netlink: { family: AF_NETLINK, module: "netlink_diag" },
  vsock: { family: AF_VSOCK, module: "vsock_diag" },
  tipc: { family: AF_TIPC, module: "tipc_diag" },
  xdp: { family: AF_XDP, module: "xsk_diag" },
};

/** The kernel module whose sock_diag handler answers for `protocol`. */
export function diagModule(protocol: Protocol): string {
  if (isInetProtocol(protocol)) return INET_PROTOCOLS[protocol].module;
  return protocol === "unix" ? "unix_diag" : FAMILY_PROTOCOLS[protocol].module;
}

/** #define PACKET_SHOW_* (linux/packet_diag.h). */
export const PACKET_SHOW_INFO = 0x01;
export const PACKET_SHOW_RING_CFG = 0x04;
export const PACKET_SHOW_FANOUT = 0x08;
export const PACKET_SHOW_MEMINFO = 0x10;
export const PACKET_SHOW_FILTER = 0x20;
/** #define NDIAG_* (linux/netlink_diag.h). */
export const NDIAG_PROTO_ALL = 0xff;
export const NDIAG_SHOW_MEMINFO = 0x01;
export const NDIAG_SHOW_GROUPS = 0x02;
/** #define XDP_SHOW_* (linux/xdp_diag.h). */
export const XDP_SHOW_INFO = 0x01;
export const XDP_SHOW_RING_CFG = 0x02;
export const XDP_SHOW_UMEM = 0x04;
export const XDP_SHOW_MEMINFO = 0x08;
export const XDP_SHOW_STATS = 0x10;

/** What each dump asks for: every attribute ss shows (its packet_show_netlink, netlink_show_netlink, xdp_show). */
const SHOW: Readonly<Record<FamilyProtocol, number>> = {
  packet:
    PACKET_SHOW_INFO | PACKET_SHOW_MEMINFO | PACKET_SHOW_FILTER | PACKET_SHOW_RING_CFG | PACKET_SHOW_FANOUT,
  netlink: NDIAG_SHOW_GROUPS | NDIAG_SHOW_MEMINFO,
  vsock: 0,
  tipc: 0,
  xdp: XDP_SHOW_INFO | XDP_SHOW_RING_CFG | XDP_SHOW_UMEM | XDP_SHOW_MEMINFO | XDP_SHOW_STATS,
};

/**
 * Append the dump request of `protocol`'s family for `states` (only vsock and tipc filter by
 * state; the others have one state). Allocates nothing:
 *   packet/netlink/xdp: __u8 family, protocol; __u16 pad; __u32 ino; __u32 show; __u32 cookie[2];
 *   vsock:              __u8 family, protocol; __u16 pad; __u32 states; __u32 ino; __u32 show; __u32 cookie[2];
 *   tipc:               __u8 family, protocol; __u16 pad; __u32 states;
 */
export function writeFamilyDumpRequest(
  w: MessageWriter,
  seq: number,
  protocol: FamilyProtocol,
  states: number,
): void {
  w.begin(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq);
  const length = protocol === "tipc" ? 8 : protocol === "vsock" ? 24 : 20;
  const o = w.reserve(length);
  const b = w.buf;
  b[o] = FAMILY_PROTOCOLS[protocol].family;
  if (protocol === "netlink") b[o + 1] = NDIAG_PROTO_ALL;
  if (protocol === "vsock" || protocol === "tipc") b.writeUInt32LE(states >>> 0, o + 4);
  else b.writeUInt32LE(SHOW[protocol], o + 8);
  w.end();
}
