/**
 * The holder child's table of held sockets: descriptors by id, and the probes the parent asks for
 * (recv and send errnos, waiting for an errno). Runs only in the child (holder-main.ts).
 */
import { unlinkSync } from "node:fs";
import { constants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { close, Errno, errnoName, MSG_DONTWAIT, recvErrno, SysError, sendto } from "../../src/sys/index.js";
import type { HeldSocket } from "./holder-protocol.js";

/** MSG_NOSIGNAL (linux/socket.h): no SIGPIPE from a send on a reset stream. */
const MSG_NOSIGNAL = 0x4000;
/** How long waitFor rests between rounds of probes. */
const WAIT_ROUND_MS = 2;

/** One held descriptor and what the parent was told about it. */
export interface HeldEntry {
  fd: number;
  record: HeldSocket;
  /** The name as bound (abstract names keep their NUL), for connecting to it and unlinking paths. */
  unixName?: string;
  /** Errnos other than EAGAIN this socket's recv reported once: the kernel hands sk_err out only once. */
  seen?: Set<number>;
}

/** SocketTable owns every descriptor the child holds; `closeAll` releases them. */
export class SocketTable {
  private readonly entries = new Map<number, HeldEntry>();
  private nextId = 1;
  private readonly recvBuf = Buffer.alloc(64);
  private readonly sendBuf = Buffer.from("x");

  /** size is the number of sockets held. */
  get size(): number {
    return this.entries.size;
  }

  /** newId hands out the next socket id (ids are never reused). */
  newId(): number {
    return this.nextId++;
  }

  /** add records a socket the table now owns. */
  add(entry: HeldEntry): void {
    this.entries.set(entry.record.id, entry);
  }

  /** get returns the entry for `id` or throws an Error naming it. */
  get(id: number): HeldEntry {
    const e = this.entries.get(id);
    if (!e) throw new Error(`holder ${process.pid}: no socket with id ${id}`);
    return e;
  }

  /** recvErrno is the errno of one non-blocking recv(2) on socket `id`: 0 when data or EOF came. */
  recvErrno(id: number): number {
    const e = this.get(id);
    const n = recvErrno(e.fd, this.recvBuf, MSG_DONTWAIT);
    if (n >= 0) return 0;
    const err = -n;
    if (err !== Errno.EAGAIN) {
      e.seen ??= new Set();
      e.seen.add(err);
    }
    return err;
  }

  /** poll gives recvErrno for each id, in order (all ids are checked before any is probed). */
  poll(ids: readonly number[]): number[] {
    for (const id of ids) this.get(id);
    return ids.map((id) => this.recvErrno(id));
  }

  /** send gives, per id, the errno of a 1-byte send(2) without an address (0 when it was sent). */
  send(ids: readonly number[]): number[] {
    const fds = ids.map((id) => this.get(id).fd);
    return fds.map((fd) => {
      try {
        sendto(fd, this.sendBuf, 1, MSG_DONTWAIT | MSG_NOSIGNAL, null);
        return 0;
      } catch (err) {
        if (err instanceof SysError) return err.errno;
        throw err;
      }
    });
  }

  /**
   * waitFor resolves once every id's recv reports `name` (an errno name such as "ECONNABORTED"),
   * now or in an earlier probe, and rejects after `timeoutMs` naming the ids that did not, with
   * the errno each reported last.
   */
  async waitFor(ids: readonly number[], name: string, timeoutMs: number): Promise<void> {
    const wanted = (constants.errno as Record<string, number>)[name];
    if (wanted === undefined) throw new Error(`waitFor: unknown errno name ${JSON.stringify(name)}`);
    for (const id of ids) this.get(id);
    const deadline = Date.now() + timeoutMs;
    let pending = [...ids];
    const last = new Map<number, number>();
    for (;;) {
      pending = pending.filter((id) => {
        const err = this.recvErrno(id);
        last.set(id, err);
        return err !== wanted && !this.entries.get(id)?.seen?.has(wanted);
      });
      if (pending.length === 0) return;
      if (Date.now() >= deadline) {
        const shown = pending.slice(0, 20).map((id) => `${id} (${describe(last.get(id) ?? 0)})`);
        const more = pending.length > 20 ? ` and ${pending.length - 20} more` : "";
        throw new Error(
          `waitFor ${name}: ${pending.length} of ${ids.length} sockets did not report it within ` +
            `${timeoutMs} ms: ${shown.join(", ")}${more}`,
        );
      }
      await sleep(WAIT_ROUND_MS);
    }
  }

  /** close closes the sockets `ids` (unlinking bound unix paths) and forgets them. */
  close(ids: readonly number[]): void {
    for (const id of ids) this.get(id);
    for (const id of ids) this.release(this.get(id));
  }

  /** closeAll closes every held socket; used on stop and on a failed batch. */
  closeAll(): void {
    for (const e of [...this.entries.values()]) this.release(e);
  }

  /** release closes one entry's descriptor (held, or opened by a failed batch); it is forgotten even if close(2) fails. */
  release(e: Omit<HeldEntry, "record"> & { record?: HeldSocket }): void {
    if (e.record) this.entries.delete(e.record.id);
    try {
      close(e.fd);
    } finally {
      if (e.unixName && e.unixName[0] !== "\0") unlinkQuietly(e.unixName);
    }
  }
}

function describe(errno: number): string {
  return errno === 0 ? "ok" : errnoName(errno);
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already removed, or an accepted socket sharing its listener's path: nothing to clean.
  }
}
