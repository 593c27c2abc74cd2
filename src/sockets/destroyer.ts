/**
 * Destroyer: sends SOCK_DESTROY requests for many sockets in batches — many requests in one write,
 * matched to the kernel's answers by sequence number — and classifies each outcome into a
 * DestroyReport. Memory is bounded by the batch size, whatever the number of sockets.
 *
 * The requests ask for no ack: the kernel then answers only failures, and a barrier at the end of
 * the write (NLMSG_NOOP with NLM_F_ACK) says when all were processed: one receive per failure
 * instead of one per socket, with the same outcome per socket as one ack each.
 *
 * ENOENT does not prove a socket gone. The kernel's destroy looks the socket up by its 4-tuple and
 * then checks the cookie (net/ipv4/udp_diag.c __udp_diag_destroy, inet_diag_find_one_icsk): when
 * several sockets share the 4-tuple — an SO_REUSEPORT group, or an IPv6 socket connected to
 * ::ffff:a.b.c.d beside IPv4 sockets with the same ports — the lookup finds one of them, and the
 * others are answered ENOENT while they live on. settle() re-lists them, and destroys again those
 * still there, until none is left or a round destroys none.
 */

import { INET_PROTOCOLS, isInetProtocol } from "../diag/constants.js";
import { writeDestroyRequest } from "../diag/inet.js";
import { type InetSocket, idFault, isInetSocket, type Protocol, type Socket } from "../diag/socket.js";
import { type BatchOptions, batchErrno, ErrorsOnlyBatch, type NetlinkConnection } from "../netlink/index.js";
import { AbortError, type DestroyFailure, type Outcome } from "../run/index.js";
import { describeErrno, Errno, errnoName } from "../sys/errors.js";
import { type DestroyReport, emptyReport } from "./report.js";

/** Requests per write, by default. */
export const DEFAULT_BATCH_SIZE = 512;
// sizeof(nlmsghdr) + sizeof(inet_diag_req_v2) + one u32 attribute (MPTCP's protocol number).
const REQUEST_BYTES = 16 + 56 + 8;

/** Why a socket still listed after a round that destroyed none of its kind could not be destroyed. */
export const SHADOWED_MESSAGE =
  "still there: the kernel's destroy lookup finds another socket with the same addresses and ports first (an SO_REUSEPORT group, or a v4-mapped IPv6 socket beside IPv4 ones), and destroying that one did not make way";

/** Told the outcome of each matched socket, as soon as it is known. */
export type OutcomeListener = (socket: Socket, outcome: Outcome, failure?: DestroyFailure) => void;

/**
 * Destroyer destroys the sockets added to it, in batches, and keeps the report of every outcome.
 * Batches that fill while the dump that finds the sockets still runs go out on a second netlink
 * socket (`connect`, opened only then); the rest goes out on whichever socket flush() is given —
 * usually the dump's own, idle once the dump is over. Call flush() after the last add().
 */
export class Destroyer {
  readonly report: DestroyReport;
  private readonly batch: ErrorsOnlyBatch;
  private pending: InetSocket[] = [];
  /** Sockets answered ENOENT and not re-listed yet: gone, or shadowed by a twin (see settle). */
  private doubtful = new Map<bigint, InetSocket>();
  private readonly stoppedProtocols = new Set<Protocol>();
  private stoppedAll = false;
  /** Protocols that have had one destroy answered: the first of each goes alone, as a probe. */
  private readonly probed = new Set<Protocol>();

  /**
   * `connect` gives the netlink socket (in the sockets' namespace; the caller owns it) for batches
   * sent before flush(). At most `batchSize` requests go per write — fewer if `queueBytes` (the
   * receive queue the kernel granted) could not hold as many failure answers. `onOutcome` is told
   * each socket's outcome.
   */
  constructor(
    private readonly connect: () => NetlinkConnection,
    queueBytes: number,
    private readonly options: BatchOptions<OutcomeListener> = {},
  ) {
    this.batch = new ErrorsOnlyBatch(queueBytes, options.batchSize ?? DEFAULT_BATCH_SIZE, REQUEST_BYTES);
    this.report = emptyReport(false);
  }

  /** Queue `socket` for destruction; a full batch is sent at once. */
  add(socket: Socket): void {
    this.report.matched++;
    if (this.isStopped(socket)) {
      this.skip(socket);
      return;
    }
    if (!isInetSocket(socket)) {
      // Only inet_diag has destroy handlers: the kernel would answer EOPNOTSUPP to every request.
      this.fail(socket, Errno.EOPNOTSUPP);
      return;
    }
    const fault = idFault(socket);
    if (fault) {
      // A predicate or listener changed the socket after it was listed: no id to send for it.
      this.fail(socket, Errno.EINVAL, `not sent: its ${fault.field} "${fault.text}" is ${fault.reason}`);
      return;
    }
    this.pending.push(socket);
    if (this.pending.length >= this.batch.capacity) this.flush(this.connect());
  }

  /**
   * Send what is queued on `conn` and wait until the kernel has processed all of it. The first
   * request of each protocol goes alone: if the kernel refuses it for a reason that holds for the
   * others too (EPERM, EOPNOTSUPP), they are never sent, only counted as skipped.
   */
  flush(conn: NetlinkConnection = this.connect()): void {
    while (this.pending.length > 0) {
      if (this.options.signal?.aborted) this.abort();
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

  /**
   * Decide the ENOENT answers, after the last flush(): `relist` hands over every socket the query
   * lists now. A doubtful socket not listed is gone; one still listed is sent again — its twin that
   * the kernel found instead was destroyed by the round before, so each round destroys at least one
   * socket per group. When a round destroys none, those still listed fail (SHADOWED_MESSAGE).
   * Costs one listing per round: one when only closed sockets answered ENOENT, k for a group of k.
   */
  settle(conn: NetlinkConnection, relist: (sink: (s: Socket) => void) => void): void {
    let progress = true;
    while (this.doubtful.size > 0) {
      const asked = this.doubtful;
      const still: InetSocket[] = [];
      relist((s) => {
        const mine = isInetSocket(s) ? asked.get(s.cookie) : undefined;
        if (mine && asked.delete(s.cookie)) still.push(mine);
      });
      this.doubtful = new Map();
      for (const s of asked.values()) {
        this.report.gone++;
        this.options.onOutcome?.(s, "gone");
      }
      if (!progress) {
        for (const s of still) this.fail(s, Errno.ENOENT, SHADOWED_MESSAGE);
        return;
      }
      const destroyed = this.report.destroyed;
      this.pending.push(...still);
      this.flush(conn);
      progress = this.report.destroyed > destroyed;
    }
  }

  /**
   * After `err` ended the run: every socket still queued, or answered ENOENT and not re-listed,
   * fails with that cause — counted, never dropped, so the report balances.
   */
  abandon(err: unknown): void {
    const errno = batchErrno(err);
    const why = err instanceof Error ? err.message : String(err);
    for (const s of this.pending.splice(0)) this.fail(s, errno, `not attempted: ${why}`);
    for (const s of this.doubtful.values()) this.fail(s, errno, `answered ENOENT, not verified: ${why}`);
    this.doubtful.clear();
  }

  /**
   * Stop before sending more: every socket still queued is skipped, with `reason` in `stops` once.
   * Sockets answered ENOENT and not re-listed yet are unverified: they fail with the reason.
   */
  stop(code: string, reason: string): void {
    for (const s of this.pending.splice(0)) this.skip(s);
    for (const s of this.doubtful.values())
      this.fail(s, Errno.ENOENT, `answered ENOENT, not verified: ${reason}`);
    this.doubtful.clear();
    this.stoppedAll = true;
    if (!this.report.stops.some((s) => s.code === code))
      this.report.stops.push({ protocol: undefined, code, reason });
  }

  /** Stop before the next write because the caller's signal aborted: stop(), then AbortError goes up. */
  abort(): never {
    const reason: unknown = this.options.signal?.reason;
    this.stop("ABORT_ERR", reason instanceof Error ? reason.message : "aborted by the caller's signal");
    throw new AbortError(this.options.signal);
  }

  private send(conn: NetlinkConnection, batch: readonly InetSocket[]): void {
    const w = this.batch.writer.reset();
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
    let errnos: Int32Array;
    try {
      errnos = this.batch.send(conn, firstSeq, batch.length, conn.nextSeq(), "destroy");
    } catch (err) {
      // Whether the kernel acted on this batch is unknown: each of its sockets failed, with the reason.
      for (const s of batch) this.fail(s, batchErrno(err));
      throw err;
    }
    for (let i = 0; i < batch.length; i++) this.answer(batch[i]!, errnos[i]!);
  }

  private isStopped(socket: Socket): boolean {
    return this.stoppedAll || this.stoppedProtocols.has(socket.protocol);
  }

  private skip(socket: Socket): void {
    this.report.skipped++;
    this.options.onOutcome?.(socket, "skipped");
  }

  private answer(socket: InetSocket, errno: number): void {
    this.probed.add(socket.protocol);
    if (errno === 0) {
      this.report.destroyed++;
      this.options.onOutcome?.(socket, "destroyed");
    } else if (errno === Errno.ENOENT) {
      this.doubtful.set(socket.cookie, socket);
    } else {
      this.fail(socket, errno);
    }
  }

  private fail(socket: Socket, errno: number, message = destroyErrorMessage(errno, socket.protocol)): void {
    const failure = { socket, errno, code: errnoName(errno), message };
    this.report.failed.push(failure);
    this.options.onOutcome?.(socket, "failed", failure);
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

/** The explanation of an errno answered to SOCK_DESTROY for `protocol`. */
export function destroyErrorMessage(errno: number, protocol: Protocol): string {
  if (errno === Errno.EPERM)
    return "destroying sockets needs CAP_NET_ADMIN in the socket's network namespace";
  if (errno === Errno.EOPNOTSUPP) {
    return isInetProtocol(protocol) && INET_PROTOCOLS[protocol].destroyable
      ? "this kernel cannot destroy sockets (built without CONFIG_INET_DIAG_DESTROY)"
      : `the kernel cannot destroy ${protocol} sockets (no SOCK_DESTROY handler for this protocol)`;
  }
  return `${errnoName(errno)} (${describeErrno(errno)})`;
}

/**
 * Whether an answer means further attempts are pointless: EPERM holds for the whole namespace,
 * EOPNOTSUPP for the protocol (or the whole kernel).
 */
export function stopScope(errno: number): "all" | "protocol" | undefined {
  if (errno === Errno.EPERM) return "all";
  if (errno === Errno.EOPNOTSUPP) return "protocol";
  return undefined;
}
