/** XdpSocket: one struct xdp_diag_msg with its attributes, as plain data (diag/xdp.ts fills it). */
import { jsonHead, jsonSafe } from "./json-head.js";
import type { SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** XDP_DIAG_RX_RING, TX_RING, UMEM_FILL_RING, UMEM_COMPLETION_RING (struct xdp_diag_ring). */
export interface XdpRing {
  /** Descriptors in the ring. */
  entries: number;
}

/** XDP_DIAG_UMEM (struct xdp_diag_umem). */
export interface XdpUmem {
  id: number;
  size: bigint;
  numPages: number;
  chunkSize: number;
  headroom: number;
  /** The interface and queue its buffer pool is bound to. */
  ifindex: number;
  queueId: number;
  /** XDP_DU_F_ZEROCOPY (0x1): the driver works in the umem itself. */
  flags: number;
  /** Sockets sharing it. */
  refs: number;
}

/** XDP_DIAG_STATS (struct xdp_diag_stats). */
export interface XdpStats {
  rxDropped: bigint;
  rxInvalid: bigint;
  rxFull: bigint;
  fillRingEmpty: bigint;
  txInvalid: bigint;
  txRingEmpty: bigint;
}

/**
 * XdpSocket is one xdp_diag_msg with the attributes asked for, as plain data. The kernel lists
 * only bound XDP sockets, so XDP_DIAG_INFO names the interface queue each is bound to: its
 * xsk_diag_fill refuses an unbound one, which ends the dump there (the sockets after it in the
 * namespace's list are not sent, to ss either).
 */
export class XdpSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "xdp" as const;
  readonly protocol = "xdp" as const;
  /** AF_XDP sockets are SOCK_RAW. */
  readonly type = "raw" as const;
  /** An XDP socket has no connection state: ss shows every one as UNCONN. */
  readonly state: StateName = "close";
  inode: number;
  cookie: bigint;
  /** XDP_DIAG_INFO: the interface and queue it is bound to. */
  ifindex = 0;
  queueId = 0;
  /** That interface's name in the socket's namespace ("ifN" when it has none), unset for 0. */
  declare interface?: string;
  /** Bytes queued to be read (SK_MEMINFO_RMEM_ALLOC, as ss's Recv-Q); Send-Q is always 0. */
  rqueue = 0;
  readonly wqueue = 0;
  declare uid?: number;
  declare rxRing?: XdpRing;
  declare txRing?: XdpRing;
  declare umem?: XdpUmem;
  declare fillRing?: XdpRing;
  declare completionRing?: XdpRing;
  declare skmem?: SkMemInfo;
  declare stats?: XdpStats;

  constructor(inode: number, cookie: bigint) {
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      ...jsonHead(this),
      ifindex: this.ifindex,
      interface: this.interface ?? null,
      queueId: this.queueId,
      cookie: this.cookie.toString(),
      inode: this.inode,
      uid: this.uid ?? null,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.rxRing) out.rxRing = this.rxRing;
    if (this.txRing) out.txRing = this.txRing;
    if (this.umem) out.umem = jsonSafe(this.umem);
    if (this.fillRing) out.fillRing = this.fillRing;
    if (this.completionRing) out.completionRing = this.completionRing;
    if (this.skmem) out.skmem = this.skmem;
    if (this.stats) out.stats = jsonSafe(this.stats);
    return out;
  }
}
