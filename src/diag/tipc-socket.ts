/** TipcSocket: one TIPC socket of a tipc_diag answer, as plain data (diag/tipc.ts fills it). */
import { jsonHead } from "./json-head.js";
import type { SocketBase, SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** A TIPC socket's type: SOCK_STREAM, SOCK_DGRAM, SOCK_RDM or SOCK_SEQPACKET. */
export type TipcType = "stream" | "dgram" | "rdm" | "seqpacket";

/** TIPC_NLA_SOCK_CON: the peer of a connected socket, and the service it connected to (if by name). */
export interface TipcConnection {
  /** TIPC_NLA_CON_NODE, TIPC_NLA_CON_SOCK. */
  node: number;
  port: number;
  /** TIPC_NLA_CON_FLAG set: TIPC_NLA_CON_TYPE and TIPC_NLA_CON_INST. */
  service?: { type: number; instance: number };
}

/** TIPC_NLA_SOCK_GROUP: the communication group the socket joined. */
export interface TipcGroup {
  /** TIPC_NLA_SOCK_GROUP_ID (the group's service type), _INSTANCE (this member's). */
  id: number;
  instance: number;
  bcSendNext: number;
  /** TIPC_NLA_SOCK_GROUP_NODE_SCOPE / _CLUSTER_SCOPE. */
  scope?: "node" | "cluster";
  /** TIPC_NLA_SOCK_GROUP_OPEN. */
  open: boolean;
}

/**
 * TipcSocket is one TIPC socket as the kernel's tipc_sk_fill_sock_diag describes it: its own
 * address (node and port reference), its peer if connected, and its queues, which TIPC counts in
 * messages, not bytes (ss's Recv-Q and Send-Q show these counts).
 */
export class TipcSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "tipc" as const;
  readonly protocol = "tipc" as const;
  type: TipcType;
  /** TIPC_NLA_SOCK_TIPC_STATE, in TCP's numbers: open is "close", connecting "syn-sent", disconnecting "close-wait". */
  state: StateName = "unknown";
  /** TIPC_NLA_SOCK_ADDR: this node's address. */
  node = 0;
  /** TIPC_NLA_SOCK_REF: the socket's port id. */
  ref = 0;
  declare connection?: TipcConnection;
  /** TIPC_NLA_SOCK_HAS_PUBL: it has bound a service name. */
  published = false;
  uid = 0;
  inode = 0;
  cookie = 0n;
  /** TIPC_NLA_SOCK_STAT_RCVQ, _SENDQ: messages queued. */
  rqueue = 0;
  wqueue = 0;
  /** TIPC_NLA_SOCK_STAT_DROP. */
  drops = 0;
  /** TIPC_NLA_SOCK_STAT_LINK_CONG, _CONN_CONG. */
  linkCongested = false;
  connCongested = false;
  declare group?: TipcGroup;

  constructor(type: TipcType) {
    this.type = type;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      ...jsonHead(this),
      node: this.node,
      ref: this.ref,
      connection: this.connection ?? null,
      published: this.published,
      cookie: this.cookie.toString(),
      inode: this.inode,
      uid: this.uid,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
      drops: this.drops,
      linkCongested: this.linkCongested,
      connCongested: this.connCongested,
    };
    if (this.group) out.group = this.group;
    return out;
  }
}
