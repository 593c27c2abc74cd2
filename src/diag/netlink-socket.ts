/** NetlinkSocket: one struct netlink_diag_msg with its attributes, as plain data (diag/netlink-diag.ts fills it). */
import { jsonHead } from "./json-head.js";
import type { SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** NetlinkSocket is one netlink_diag_msg with the attributes asked for, as plain data. */
export class NetlinkSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "netlink" as const;
  readonly protocol = "netlink" as const;
  /** ss shows every netlink socket as UNCONN; whether it has a default destination is `connected`. */
  readonly state: StateName = "close";
  /** SOCK_RAW or SOCK_DGRAM (the same thing for netlink). */
  type: "raw" | "dgram";
  /** ndiag_protocol: NETLINK_ROUTE 0, NETLINK_SOCK_DIAG 4, NETLINK_GENERIC 16, ... */
  netlinkProtocol: number;
  /** Its port id (the kernel's own sockets have 0), signed as ss prints it: autobound ids are negative. */
  portid: number;
  /** NETLINK_CONNECTED: connect(2) gave it a default destination (dstGroup, dstPortid). */
  connected: boolean;
  dstPortid: number;
  dstGroup: number;
  inode: number;
  cookie: bigint;
  /** NETLINK_DIAG_MEMINFO: bytes to be read and bytes sent not yet freed (ss's Recv-Q and Send-Q). */
  rqueue = 0;
  wqueue = 0;
  /** NETLINK_DIAG_GROUPS: the multicast groups joined, as u32 mask words (group 1 is bit 0 of word 0). */
  groups: number[] = [];
  declare skmem?: SkMemInfo;

  constructor(
    type: "raw" | "dgram",
    netlinkProtocol: number,
    ids: { portid: number; connected: boolean; dstPortid: number; dstGroup: number },
    inode: number,
    cookie: bigint,
  ) {
    this.type = type;
    this.netlinkProtocol = netlinkProtocol;
    this.portid = ids.portid;
    this.connected = ids.connected;
    this.dstPortid = ids.dstPortid;
    this.dstGroup = ids.dstGroup;
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      ...jsonHead(this),
      netlinkProtocol: this.netlinkProtocol,
      portid: this.portid,
      connected: this.connected,
      dstPortid: this.dstPortid,
      dstGroup: this.dstGroup,
      groups: this.groups,
      cookie: this.cookie.toString(),
      inode: this.inode,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.skmem) out.skmem = this.skmem;
    return out;
  }
}
