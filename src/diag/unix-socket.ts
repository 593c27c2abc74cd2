/** UnixSocket: one struct unix_diag_msg with the attributes asked for, as plain data (diag/unix.ts fills it). */
import { jsonHead } from "./json-head.js";
import type { SkMemInfo, SocketBase, SocketNetns } from "./socket.js";
import { type StateName, stateName } from "./states.js";

export type UnixType = "stream" | "dgram" | "seqpacket";

/** UnixSocket is one unix_diag_msg with the attributes that were asked for, as plain data. */
export class UnixSocket implements SocketBase {
  netns: SocketNetns | undefined = undefined;
  readonly family = "unix" as const;
  readonly protocol = "unix" as const;
  type: UnixType;
  state: StateName;
  inode: number;
  cookie: bigint;
  /** UNIX_DIAG_RQLEN: receive queue (or accept backlog for listeners) and write queue (or max backlog). */
  rqueue = 0;
  wqueue = 0;
  /** Bound path, or "@name" for an abstract name (leading NUL shown as "@", as ss does); undefined when unnamed. */
  declare name?: string;
  /**
   * The name's bytes as the kernel gave them (an abstract name's leading NUL included), where
   * `name` does not say them: they are not UTF-8, or an abstract name holds a NUL. JSON: base64.
   */
  declare nameBytes?: Buffer;
  /** Inode of the peer socket (UNIX_DIAG_PEER). */
  declare peer?: number;
  /** Device and inode of the bound file (UNIX_DIAG_VFS). */
  declare vfs?: { dev: number; ino: number };
  /** Inodes of connections waiting to be accepted (UNIX_DIAG_ICONS). */
  declare icons?: number[];
  declare skmem?: SkMemInfo;
  declare shutdown?: number;
  declare uid?: number;

  constructor(type: UnixType, stateCode: number, inode: number, cookie: bigint) {
    this.type = type;
    this.state = stateName(stateCode);
    this.inode = inode;
    this.cookie = cookie;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      ...jsonHead(this),
      name: this.name ?? null,
      ...(this.nameBytes && { nameBytes: this.nameBytes.toString("base64") }),
      peer: this.peer ?? null,
      cookie: this.cookie.toString(),
      inode: this.inode,
      uid: this.uid ?? null,
      rqueue: this.rqueue,
      wqueue: this.wqueue,
    };
    if (this.vfs) out.vfs = this.vfs;
    if (this.icons) out.icons = this.icons;
    if (this.skmem) out.skmem = this.skmem;
    if (this.shutdown !== undefined) out.shutdown = this.shutdown;
    return out;
  }
}
