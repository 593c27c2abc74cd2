/** VsockSocket: one struct vsock_diag_msg, as plain data (diag/vsock.ts fills it). */
import { jsonHead } from "./json-head.js";
import type { SocketBase, SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** A vsock socket's type: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET. */
export type VsockType = "stream" | "dgram" | "seqpacket";

/** VMADDR_CID_ANY and VMADDR_PORT_ANY (linux/vm_sockets.h): not bound or not connected; ss prints "*". */
export const VMADDR_ANY = 0xffffffff;

/** The ids of a vsock socket's two ends (struct vsock_diag_msg). */
export interface VsockEnds {
  srcCid: number;
  srcPort: number;
  dstCid: number;
  dstPort: number;
}

/**
 * VsockSocket is one vsock_diag_msg as plain data. vsock_diag sends no attributes: no queues, no
 * uid (ss shows 0 and 0).
 */
export class VsockSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "vsock" as const;
  readonly protocol = "vsock" as const;
  type: VsockType;
  /** vdiag_state: sk_state, in TCP's numbers (established, syn-sent, listening, closing, close). */
  state: StateName;
  /** vdiag_shutdown: RCV_SHUTDOWN 1 | SEND_SHUTDOWN 2. */
  shutdown: number;
  /** Local context id and port (VMADDR_ANY: any). */
  srcCid: number;
  srcPort: number;
  /** Peer context id and port (VMADDR_ANY: not connected). */
  dstCid: number;
  dstPort: number;
  inode: number;
  cookie: bigint;
  readonly rqueue = 0;
  readonly wqueue = 0;

  constructor(
    type: VsockType,
    state: StateName,
    shutdown: number,
    ends: VsockEnds,
    inode: number,
    cookie: bigint,
  ) {
    this.type = type;
    this.state = state;
    this.shutdown = shutdown;
    this.srcCid = ends.srcCid;
    this.srcPort = ends.srcPort;
    this.dstCid = ends.dstCid;
    this.dstPort = ends.dstPort;
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    return {
      ...jsonHead(this),
      srcCid: this.srcCid,
      srcPort: this.srcPort,
      dstCid: this.dstCid,
      dstPort: this.dstPort,
      shutdown: this.shutdown,
      cookie: this.cookie.toString(),
      inode: this.inode,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
  }
}
