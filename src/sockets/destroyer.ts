/**
 * Destroyer: sends SOCK_DESTROY requests for many sockets in batches — many requests in one write,
 * matched to the kernel's answers by sequence number — and classifies each outcome into a
 * DestroyReport. Memory is bounded by the batch size, whatever the number of sockets.
 *
 * The requests ask for no ack: the kernel then answers only failures, and a barrier at the end of
 * the write (NLMSG_NOOP with NLM_F_ACK) says when all were processed. Measured here, this takes a
 * 10,000-socket destroy from 10,000 receive calls to about 20, and halves its time; the outcome per
 * socket is the same as with one ack each.
 */
import { writeDestroyRequest } from "../diag/inet.js";
import type { InetSocket, Protocol, Socket } from "../diag/socket.js";
import {
  collectErrors,
  MessageWriter,
  type NetlinkConnection,
  NetlinkTimeoutError,
  writeBarrier,
} from "../netlink/index.js";
import { Errno, errnoName, SysError } from "../sys/errors.js";
import {
  type DestroyOutcome,
  type DestroyReport,
  destroyErrorMessage,
  emptyReport,
  stopScope,
} from "./destroy-report.js";
import { AbortError, type AbortSignalLike } from "./errors.js";
import { INET_PROTOCOLS } from "./protocols.js";

/** Requests per write, by default. */
export const DEFAULT_BATCH_SIZE = 512;
/**
 * What one failure's answer costs in the receive queue: 36 bytes with NETLINK_CAP_ACK, in an skb of
 * well under 1 KiB. A batch is never larger than the queue can hold if every request fails, so no
 * answer is ever dropped (ENOBUFS) — with the 4 MiB queue of a privileged caller, that is 4,096.
 */
const ANSWER_BYTES = 1024;
// sizeof(nlmsghdr) + sizeof(inet_diag_req_v2) + one u32 attribute (MPTCP's protocol number).
const REQUEST_BYTES = 16 + 56 + 8;
const BARRIER_BYTES = 16;

/** Told the outcome of each matched socket, in order, as soon as it is known. */
export type OutcomeListener = (socket: Socket, outcome: DestroyOutcome) => void;

/**
 * Destroyer destroys the sockets added to it, in batches, and keeps the report of every outcome.
 * Batches that fill while the dump that finds the sockets still runs go out on a second netlink
 * socket (`connect`, opened only then); the rest goes out on whichever socket flush() is given —
 * usually the dump's own, idle once the dump is over. Call flush() after the last add().
 */
export class Destroyer {
  readonly report: DestroyReport;
  private readonly writer: MessageWriter;
  private pending: InetSocket[] = [];
  /** The errno answered for each request of the batch in flight (0: no answer, success). */
  private readonly errnos: Int32Array;
  private readonly stoppedProtocols = new Set<Protocol>();
  private stoppedAll = false;
  /** Protocols that have had one destroy answered: the first of each goes alone, as a probe. */
  private readonly probed = new Set<Protocol>();
  private readonly batchSize: number;

  /**
   * `connect` gives the netlink socket (in the sockets' namespace; the caller owns it) for batches
   * sent before flush(). At most `batchSize` requests go per write — fewer if `queueBytes` (the
   * receive queue the kernel granted) could not hold as many failure answers. `onOutcome` is told
   * each socket's outcome.
   */
  constructor(
    private readonly connect: () => NetlinkConnection,
    queueBytes: number,
    batchSize = DEFAULT_BATCH_SIZE,
    private readonly onOutcome?: OutcomeListener,
    private readonly signal?: AbortSignalLike,
  ) {
    const room = Math.max(1, Math.floor(queueBytes / ANSWER_BYTES));
    this.batchSize = Math.max(1, Math.min(Math.floor(batchSize) || 1, room));
    this.report = emptyReport(false);
    this.writer = new MessageWriter(Buffer.alloc(this.batchSize * REQUEST_BYTES + BARRIER_BYTES));
    this.errnos = new Int32Array(this.batchSize);
  }

  /** Queue `socket` for destruction; a full batch is sent at once. */
  add(socket: Socket): void {
    this.report.matched++;
    if (this.isStopped(socket)) {
      this.skip(socket);
      return;
    }
    if (socket.family === "unix") {
      // unix_diag has no destroy handler: the kernel would answer EOPNOTSUPP to every request.
      this.fail(socket, Errno.EOPNOTSUPP);
      return;
    }
    this.pending.push(socket);
    if (this.pending.length >= this.batchSize) this.flush(this.connect());
  }

  /**
   * Send what is queued on `conn` and wait until the kernel has processed all of it. The first
   * request of each protocol goes alone: if the kernel refuses it for a reason that holds for the
   * others too (EPERM, EOPNOTSUPP), they are never sent, only counted as skipped.
   */
  flush(conn: NetlinkConnection = this.connect()): void {
    while (this.pending.length > 0) {
      if (this.signal?.aborted) this.abort();
      let n = 1;
      if (this.probed.has(this.pending[0]!.protocol)) {
        while (n < this.pending.length && this.probed.has(this.pending[n]!.protocol)) n++;
      }
      this.send(conn, this.pending.splice(0, n));
      if (this.stoppedAll || this.stoppedProtocols.size > 0) {
        const left = this.pending;
        this.pending = [];
        for (const s of left) {
          if (this.isStopped(s)) this.skip(s);
          else this.pending.push(s);
        }
      }
    }
  }

  /** Stop before the next write: what is queued is skipped, the report says so, AbortError goes up. */
  private abort(): never {
    for (const s of this.pending.splice(0)) this.skip(s);
    const reason = "aborted by the caller's signal";
    if (!this.report.stops.some((s) => s.code === "ABORT_ERR"))
      this.report.stops.push({ protocol: undefined, code: "ABORT_ERR", reason });
    throw new AbortError(this.signal);
  }

  private send(conn: NetlinkConnection, batch: readonly InetSocket[]): void {
    const w = this.writer.reset();
    const firstSeq = conn.nextSeq();
    for (let i = 0; i < batch.length; i++) {
      const s = batch[i]!;
      writeDestroyRequest(
        w,
        i === 0 ? firstSeq : conn.nextSeq(),
        s,
        INET_PROTOCOLS[s.protocol].number,
        false,
      );
    }
    const barrier = conn.nextSeq();
    writeBarrier(w, barrier);
    const errnos = this.errnos;
    errnos.fill(0, 0, batch.length);
    try {
      conn.send(w.buf, w.length);
      collectErrors(conn, firstSeq, batch.length, barrier, "destroy", (index, errno) => {
        errnos[index] = errno;
      });
    } catch (err) {
      // Whether the kernel acted on this batch is unknown: each of its sockets failed, with the reason.
      const errno =
        err instanceof SysError
          ? err.errno
          : err instanceof NetlinkTimeoutError
            ? Errno.ETIMEDOUT
            : Errno.EIO;
      for (const s of batch) this.fail(s, errno);
      for (const s of this.pending.splice(0)) this.fail(s, errno);
      throw err;
    }
    for (let i = 0; i < batch.length; i++) this.answer(batch[i]!, errnos[i]!);
  }

  private isStopped(socket: Socket): boolean {
    return this.stoppedAll || this.stoppedProtocols.has(socket.protocol);
  }

  private skip(socket: Socket): void {
    this.report.skipped++;
    this.onOutcome?.(socket, "skipped");
  }

  private answer(socket: InetSocket, errno: number): void {
    this.probed.add(socket.protocol);
    if (errno === 0) {
      this.report.destroyed++;
      this.onOutcome?.(socket, "destroyed");
    } else if (errno === Errno.ENOENT) {
      this.report.gone++;
      this.onOutcome?.(socket, "gone");
    } else {
      this.fail(socket, errno);
    }
  }

  private fail(socket: Socket, errno: number): void {
    const message = destroyErrorMessage(errno, socket.protocol);
    this.report.failed.push({ socket, errno, code: errnoName(errno), message });
    this.onOutcome?.(socket, "failed");
    const scope = stopScope(errno);
    if (!scope) return;
    if (scope === "all") this.stoppedAll = true;
    else this.stoppedProtocols.add(socket.protocol);
    const protocol = scope === "all" ? undefined : socket.protocol;
    if (!this.report.stops.some((s) => s.protocol === protocol && s.code === errnoName(errno))) {
      this.report.stops.push({ protocol, code: errnoName(errno), reason: message });
    }
  }
}
