/** PacketSocket: one struct packet_diag_msg with its attributes, as plain data (diag/packet.ts fills it). */
import { jsonHead } from "./json-head.js";
import type { SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** A packet socket's type: SOCK_RAW (link-layer header included) or SOCK_DGRAM (cooked). */
export type PacketType = "raw" | "dgram";

/** PACKET_DIAG_INFO (struct packet_diag_info), less the interface (PacketSocket.ifindex). */
export interface PacketInfo {
  /** TPACKET version (0: TPACKET_V1). */
  version: number;
  copyThresh: number;
  tstamp: number;
  /** PDI_* bits: running 0x1, auxdata 0x2, origdev 0x4, vnethdr 0x8, loss 0x10. */
  flags: number;
}

/** PACKET_DIAG_RX_RING / TX_RING (struct packet_diag_ring). */
export interface PacketRing {
  blockSize: number;
  blockNr: number;
  frameSize: number;
  frameNr: number;
  retireTmo: number;
  sizeofPriv: number;
  features: number;
}

/** PacketSocket is one packet_diag_msg with the attributes asked for, as plain data. */
export class PacketSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "packet" as const;
  readonly protocol = "packet" as const;
  /** A packet socket has no connection state: ss shows every one as UNCONN. */
  readonly state: StateName = "close";
  type: PacketType;
  /** pdiag_num: the link-layer protocol it receives, host order (ETH_P_ALL = 3: every one; 0: none yet). */
  ethertype: number;
  inode: number;
  cookie: bigint;
  /** The interface it is bound to (0: every interface). */
  ifindex = 0;
  /** That interface's name in the socket's namespace ("if N" when it has none), unset for 0. */
  declare interface?: string;
  /** Bytes queued to be read (SK_MEMINFO_RMEM_ALLOC, as ss's Recv-Q); Send-Q is always 0. */
  rqueue = 0;
  readonly wqueue = 0;
  declare uid?: number;
  declare info?: PacketInfo;
  declare rxRing?: PacketRing;
  declare txRing?: PacketRing;
  /** PACKET_DIAG_FANOUT: the fanout group id and its type (hash 0, lb 1, cpu 2, rollover 3, rnd 4, qm 5, ...). */
  declare fanout?: { id: number; type: number };
  /** PACKET_DIAG_FILTER: the number of classic BPF instructions attached. */
  declare filterLength?: number;
  declare skmem?: SkMemInfo;

  constructor(type: PacketType, ethertype: number, inode: number, cookie: bigint) {
    this.type = type;
    this.ethertype = ethertype;
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      ...jsonHead(this),
      ethertype: this.ethertype,
      ifindex: this.ifindex,
      interface: this.interface ?? null,
      cookie: this.cookie.toString(),
      inode: this.inode,
      uid: this.uid ?? null,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.info) out.info = this.info;
    if (this.rxRing) out.rxRing = this.rxRing;
    if (this.txRing) out.txRing = this.txRing;
    if (this.fanout) out.fanout = this.fanout;
    if (this.filterLength !== undefined) out.filterLength = this.filterLength;
    if (this.skmem) out.skmem = this.skmem;
    return out;
  }
}
