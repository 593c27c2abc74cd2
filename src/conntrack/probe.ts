/**
 * probeConntrack: what conntrack allows in the caller's namespace — whether ctnetlink answers,
 * whether the kernel takes a DELETE from this caller, and how many entries the table holds — for
 * `sockdiag doctor`, since a termination deletes conntrack entries by default.
 */
import {
  CT_GET_STATS,
  decodeStatsEntries,
  NETLINK_NETFILTER,
  writeProbeDelete,
  writeStatsRequest,
} from "../ctnl/index.js";
import {
  DumpCursor,
  MessageWriter,
  type NetlinkConnection,
  NetlinkError,
  NetlinkSocket,
} from "../netlink/index.js";
import { describeErrno, Errno, errnoName, SysError } from "../sys/errors.js";

/** One check: whether it passed, and what was seen. */
export interface ConntrackCheck {
  ok: boolean;
  detail: string;
}

/** What conntrack allows here. */
export interface ConntrackProbe {
  /** ctnetlink answered a request for the table's counters. */
  answers: ConntrackCheck;
  /** The kernel took a DELETE (one for an entry that cannot exist, answered ENOENT). */
  delete: ConntrackCheck;
  /** The entries in the table (every family and protocol), as ctnetlink counts them; undefined if it did not say. */
  entries: number | undefined;
}

/** Why a request failed, in a line: the errno's name, what it means, and for EPERM the capability. */
function why(err: unknown): string {
  if (err instanceof NetlinkError || err instanceof SysError) {
    const errno = err.errno;
    const hint = errno === Errno.EPERM ? " (CAP_NET_ADMIN missing)" : "";
    return `${errnoName(errno)}: ${describeErrno(errno)}${hint}`;
  }
  return (err as Error).message;
}

/**
 * probeConntrack asks the caller's namespace's ctnetlink for its counters, then sends the DELETE
 * of an entry that cannot exist. Never throws: every failure is a check that did not pass.
 */
export function probeConntrack(): ConntrackProbe {
  let conn: NetlinkConnection;
  try {
    conn = NetlinkSocket.open(NETLINK_NETFILTER);
  } catch (err) {
    const failed = { ok: false, detail: `no nfnetlink socket: ${why(err)}` };
    return { answers: failed, delete: failed, entries: undefined };
  }
  try {
    const w = new MessageWriter(Buffer.alloc(128));
    let entries: number | undefined;
    let answers: ConntrackCheck;
    try {
      const seq = conn.nextSeq();
      writeStatsRequest(w, seq);
      conn.send(w.buf, w.length);
      using cursor = new DumpCursor(conn, seq, "conntrack stats");
      while (cursor.next())
        if (cursor.type === CT_GET_STATS)
          entries ??= decodeStatsEntries(cursor.buf, cursor.offset, cursor.length);
      answers = { ok: true, detail: "ctnetlink answers" };
    } catch (err) {
      answers = { ok: false, detail: why(err) };
    }
    let deletes: ConntrackCheck;
    try {
      w.length = 0;
      const seq = conn.nextSeq();
      writeProbeDelete(w, seq);
      conn.send(w.buf, w.length);
      using cursor = new DumpCursor(conn, seq, "conntrack delete");
      while (cursor.next()) {
        // an acknowledgement only
      }
      deletes = { ok: true, detail: "allowed" };
    } catch (err) {
      deletes =
        err instanceof NetlinkError && err.errno === Errno.ENOENT
          ? { ok: true, detail: "allowed (a DELETE of no entry answered ENOENT)" }
          : { ok: false, detail: why(err) };
    }
    return { answers, delete: deletes, entries };
  } finally {
    conn.close();
  }
}
