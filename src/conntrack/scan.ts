/**
 * ConntrackScan: one namespace's part of a conntrack query — a NETLINK_NETFILTER socket opened
 * there, one filtered dump per family asked, and each entry that passes the user-space check handed
 * to a visitor with where its original tuple lies in the receive buffer (for an exact delete).
 * A dump walks the hash shared by every namespace, so the namespace's own entry count is asked
 * first, and a namespace that holds none is not dumped at all.
 */
import {
  type ConntrackEntry,
  CT_GET_STATS,
  CT_NEW,
  type DumpFilter,
  decodeStatsEntries,
  EntryDecoder,
  type EntrySpans,
  NETLINK_NETFILTER,
  writeDumpRequest,
  writeStatsRequest,
} from "../ctnl/index.js";
import {
  DumpCursor,
  MessageWriter,
  type NetlinkConnection,
  NetlinkError,
  NetlinkSocket,
} from "../netlink/index.js";
import {
  conntrackEntries,
  inNetns,
  type NetlinkOpener,
  openNetlinkIn,
  type Target,
  targetLabel,
} from "../netns/index.js";
import { Errno, SysError } from "../sys/errors.js";
import { ConntrackUnavailableError } from "./errors.js";
import type { ConntrackPlan } from "./query.js";
import type { ConntrackNote } from "./report.js";

/** Told each matching entry; `buf` and `tuple` are valid only during the call. */
export type EntryVisitor = (entry: ConntrackEntry, buf: Buffer, spans: EntrySpans) => void;

/** The note for a namespace without conntrack. */
export function noteOf(target: Target, error: ConntrackUnavailableError): ConntrackNote {
  return { netns: targetLabel(target), skipped: "no-conntrack", message: error.message };
}

/** Whether `err` means "no conntrack": no nfnetlink (socket fails) or no ctnetlink subsystem. */
function isUnavailable(err: unknown): err is Error {
  if (err instanceof SysError) return err.errno === Errno.EPROTONOSUPPORT || err.errno === Errno.EAFNOSUPPORT;
  return err instanceof NetlinkError && err.errno === Errno.EOPNOTSUPP;
}

/** The real opener of a scan's other connections: a socket inside the namespace. */
const openReal: NetlinkOpener = (protocol, target) => openNetlinkIn(target.netns, protocol);

export class ConntrackScan implements Disposable {
  private readonly decoder = new EntryDecoder();
  /** The namespace's entry count: null until asked, undefined when the kernel did not say. */
  private counted: number | undefined | null = null;
  #conn: NetlinkConnection | undefined;

  /**
   * Open the connection in `target` (with `open`: a test's fake; by default the real socket,
   * opened only when the namespace's own count, read on the way in, is not 0). `entries`: the
   * count as the caller read it already (without entering: the one pass's plan), not read again.
   * Throws ConntrackUnavailableError, NetnsError, SysError.
   */
  constructor(
    readonly target: Target,
    readonly plan: ConntrackPlan,
    private readonly open?: NetlinkOpener,
    entries?: number,
  ) {
    if (open) {
      this.#conn = this.connect(() => open(NETLINK_NETFILTER, target));
      return;
    }
    // One visit of the namespace: its count, and the socket where there is something to dump.
    const { count, conn } = this.connect(() =>
      inNetns(target.netns, () => {
        const count = entries ?? conntrackEntries();
        return { count, conn: count === 0 ? undefined : NetlinkSocket.open(NETLINK_NETFILTER) };
      }),
    );
    // Without the counter (no nf_conntrack), the kernel's answer to a dump says why.
    if (count !== undefined) this.counted = count;
    this.#conn = conn;
  }

  /** The scan's connection (opened now in a namespace its count showed empty). */
  get conn(): NetlinkConnection {
    this.#conn ??= this.connect(() => this.openAnother());
    return this.#conn;
  }

  /** Whether the namespace's own count says it holds no entry: nothing to dump or delete. */
  get empty(): boolean {
    return this.counted === 0;
  }

  /** Another socket in the same namespace; the caller owns it. */
  openAnother(): NetlinkConnection {
    return (this.open ?? openReal)(NETLINK_NETFILTER, this.target);
  }

  /** `open()`, with "no conntrack here" made a ConntrackUnavailableError. */
  private connect<T>(open: () => T): T {
    try {
      return open();
    } catch (err) {
      if (isUnavailable(err)) throw new ConntrackUnavailableError(targetLabel(this.target), err);
      throw err;
    }
  }

  /**
   * Dump the table and call `visit` with each entry the plan matches. Throws
   * ConntrackUnavailableError, NetlinkError, DecodeError, and whatever `visit` throws.
   */
  each(visit: EntryVisitor): void {
    const { matches, filters } = this.plan;
    const label = this.target.label;
    if (this.isEmpty()) return;
    for (const filter of filters) {
      using cursor = this.start(filter);
      try {
        while (cursor.next()) {
          if (cursor.type !== CT_NEW) continue;
          const entry = this.decoder.decode(cursor.buf, cursor.offset, cursor.length, label);
          if (matches(entry)) visit(entry, cursor.buf, this.decoder.spans);
        }
      } catch (err) {
        if (isUnavailable(err)) throw new ConntrackUnavailableError(label ?? "(host)", err);
        throw err;
      }
    }
  }

  /** The matching entries, one at a time; breaking out of the loop drains the dump. */
  *entries(): Generator<ConntrackEntry> {
    if (this.isEmpty()) return;
    for (const filter of this.plan.filters) yield* this.entriesOf(filter);
  }

  /**
   * How many entries the namespace holds, as its kernel counts them (all protocols and families,
   * unconfirmed ones included); undefined when the kernel does not answer the question (a
   * NetlinkError, or an answer without the count). Asked once per scan. Throws NetlinkTimeoutError,
   * NetlinkProtocolError, SysError from the connection.
   */
  count(): number | undefined {
    if (this.counted !== null) return this.counted;
    const w = new MessageWriter(Buffer.alloc(64));
    const seq = this.conn.nextSeq();
    writeStatsRequest(w, seq);
    this.conn.send(w.buf, w.length);
    let entries: number | undefined;
    try {
      using cursor = new DumpCursor(this.conn, seq, "conntrack stats");
      while (cursor.next()) {
        if (cursor.type === CT_GET_STATS)
          entries ??= decodeStatsEntries(cursor.buf, cursor.offset, cursor.length);
      }
    } catch (err) {
      if (!(err instanceof NetlinkError)) throw err;
      entries = undefined;
    }
    this.counted = entries;
    return entries;
  }

  /** Whether the kernel says the namespace holds no entry; unknown counts as not empty. */
  private isEmpty(): boolean {
    return this.count() === 0;
  }

  private *entriesOf(filter: DumpFilter): Generator<ConntrackEntry> {
    using cursor = this.start(filter);
    const label = this.target.label;
    for (;;) {
      let entry: ConntrackEntry | undefined;
      try {
        if (!cursor.next()) return;
        if (cursor.type !== CT_NEW) continue;
        entry = this.decoder.decode(cursor.buf, cursor.offset, cursor.length, label);
      } catch (err) {
        if (isUnavailable(err)) throw new ConntrackUnavailableError(label ?? "(host)", err);
        throw err;
      }
      if (this.plan.matches(entry)) yield entry;
    }
  }

  private start(filter: DumpFilter): DumpCursor {
    const w = new MessageWriter(Buffer.alloc(256));
    const seq = this.conn.nextSeq();
    writeDumpRequest(w, seq, filter);
    this.conn.send(w.buf, w.length);
    return new DumpCursor(this.conn, seq, "conntrack dump");
  }

  [Symbol.dispose](): void {
    this.#conn?.close();
  }
}
