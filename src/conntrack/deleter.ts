/**
 * EntryDeleter sends IPCTNL_MSG_CT_DELETE requests in batches — many per write, without NLM_F_ACK
 * so that the kernel answers only failures, and a barrier (NLMSG_NOOP with NLM_F_ACK) marking the
 * end — as the socket Destroyer does. Each request carries the entry's original tuple exactly as
 * the dump listed it, and its CTA_ID: a new entry that took the tuple since is never deleted.
 * Every batch is checked by assertNoFlush just before it is sent.
 */
import {
  AF_INET,
  AF_INET6,
  assertNoFlush,
  type ConntrackEntry,
  type EntrySpans,
  writeDeleteRequest,
} from "../ctnl/index.js";
import { type BatchOptions, batchErrno, ErrorsOnlyBatch, type NetlinkConnection } from "../netlink/index.js";
import { AbortError, type Batcher, type ConntrackFailure, type Outcome } from "../run/index.js";
import { describeErrno, Errno, errnoName } from "../sys/errors.js";
import { HeldEntries } from "./held.js";
import { type ConntrackReport, emptyConntrackReport } from "./report.js";

/** Requests per write, by default. */
export const DEFAULT_CT_BATCH_SIZE = 1024;
/** The largest DELETE: nlmsghdr, nfgenmsg, an IPv6 tuple with a zone, CTA_ID, CTA_ZONE. */
const REQUEST_BYTES = 16 + 4 + 96 + 8 + 8;

export type EntryOutcomeListener = (
  entry: ConntrackEntry,
  outcome: Outcome<ConntrackEntry>,
  failure?: ConntrackFailure,
) => void;

/**
 * EntryDeleter deletes the entries added to it, in batches, and keeps the report of every outcome.
 * Batches that fill while the dump runs go out on a second socket (`connect`, opened only then);
 * the rest on the one finish() is given.
 */
export class EntryDeleter implements Batcher<[ConntrackEntry, Buffer, EntrySpans], ConntrackReport> {
  readonly report: ConntrackReport = emptyConntrackReport(false);
  private readonly batch: ErrorsOnlyBatch;
  private readonly pending: HeldEntries;
  private firstSeq = (Math.random() * 0x7fffffff) >>> 0;
  private stopped = false;

  /**
   * `connect` gives the socket (in the entries' namespace; the caller owns it) for batches that
   * fill before flush(). At most `batchSize` requests go per write, fewer if the receive queue
   * (`queueBytes`) could not hold as many failure answers.
   */
  constructor(
    private readonly connect: () => NetlinkConnection,
    queueBytes: number,
    private readonly options: BatchOptions<EntryOutcomeListener> = {},
  ) {
    this.batch = new ErrorsOnlyBatch(queueBytes, options.batchSize ?? DEFAULT_CT_BATCH_SIZE, REQUEST_BYTES);
    this.pending = new HeldEntries(this.batch.capacity);
  }

  /**
   * Queue the delete of `entry`, whose message and original tuple lie in buf at `spans`; the bytes
   * are copied at once. Throws FlushGuardError (counting the entry as failed) when the tuple is
   * incomplete.
   */
  add(entry: ConntrackEntry, buf: Buffer, spans: EntrySpans): void {
    this.report.matched++;
    if (this.stopped) {
      this.settle(-1, -1, entry);
      return;
    }
    const family = entry.family === "inet" ? AF_INET : AF_INET6;
    const seq = (this.firstSeq + this.pending.count) >>> 0;
    const tuple = spans.origTuple;
    try {
      writeDeleteRequest(
        this.batch.writer,
        seq,
        family,
        buf,
        tuple.offset,
        tuple.length,
        entry.id,
        entry.zone,
      );
    } catch (err) {
      this.settle(Errno.EINVAL, -1, entry);
      throw err;
    }
    this.pending.hold(buf, spans.message, entry.netns);
    if (this.pending.count >= this.batch.capacity) this.flush(this.connect());
  }

  /**
   * Send what is queued on `conn` and wait until the kernel has processed all of it. Once `signal`
   * has aborted, nothing more is sent: what is queued is counted as skipped and AbortError thrown.
   */
  flush(conn: NetlinkConnection = this.connect()): void {
    const count = this.pending.count;
    if (count === 0) return;
    if (this.options.signal?.aborted) this.abort();
    const first = this.firstSeq;
    const barrier = (first + count) >>> 0;
    this.firstSeq = (barrier + 1) >>> 0;
    try {
      let errnos: Int32Array;
      try {
        errnos = this.batch.send(conn, first, count, barrier, "conntrack delete", assertNoFlush);
      } catch (err) {
        // Whether the kernel acted on this batch is unknown: each of its entries failed, with the reason.
        this.settleHeld(batchErrno(err));
        throw err;
      }
      for (let i = 0; i < count; i++) this.settle(errnos[i]!, i);
    } finally {
      this.batch.writer.reset();
      this.pending.clear();
    }
  }

  /** The dump is over: send what is queued on `conn`. */
  finish(conn: NetlinkConnection): void {
    this.flush(conn);
  }

  /** Send nothing more: every entry queued now or added later is counted as skipped. */
  stop(): void {
    this.batch.writer.reset();
    this.settleHeld(-1);
    this.pending.clear();
    this.stopped = true;
  }

  /** The caller's signal aborted: stop(), then AbortError goes up. */
  abort(): never {
    this.stop();
    throw new AbortError(this.options.signal);
  }

  /** After `err` ended the namespace's run: every entry still queued fails with that cause. */
  abandon(err: unknown): void {
    this.batch.writer.reset();
    this.settleHeld(batchErrno(err));
    this.pending.clear();
  }

  /** Every held entry's outcome is `errno`. */
  private settleHeld(errno: number): void {
    for (let i = 0; i < this.pending.count; i++) this.settle(errno, i);
  }

  /** `given`, or else held entry i, decoded now. */
  private entryOf(i: number, given: ConntrackEntry | undefined): ConntrackEntry {
    return given ?? this.pending.entry(i);
  }

  /**
   * Count the outcome of held entry i (or of `given`, not held); errno -1: skipped. EPERM stops
   * every later attempt. A held entry is decoded only when a listener or a failure record needs it.
   */
  private settle(errno: number, i: number, given?: ConntrackEntry): void {
    const r = this.report;
    const listener = this.options.onOutcome;
    if (errno === -1) {
      r.skipped++;
      listener?.(this.entryOf(i, given), "skipped");
      return;
    }
    const outcome = outcomeOf(errno);
    if (outcome === "deleted") r.deleted++;
    else if (outcome === "gone") r.gone++;
    else {
      const failure = failureOf(this.entryOf(i, given), errno);
      r.failed.push(failure);
      if (errno === Errno.EPERM) this.stopped = true;
      listener?.(failure.entry, outcome, failure);
      return;
    }
    listener?.(this.entryOf(i, given), outcome);
  }
}

/** Classify the kernel's answer to one DELETE (0: deleted). */
export function outcomeOf(errno: number): "deleted" | "gone" | "failed" {
  if (errno === 0) return "deleted";
  return errno === Errno.ENOENT ? "gone" : "failed";
}

/** A failure record for `entry`. */
export function failureOf(entry: ConntrackEntry, errno: number): ConntrackFailure {
  const message =
    errno === Errno.EPERM
      ? "deleting conntrack entries needs CAP_NET_ADMIN in the entry's network namespace"
      : `${errnoName(errno)} (${describeErrno(errno)})`;
  return { entry, errno, code: errnoName(errno), message };
}
