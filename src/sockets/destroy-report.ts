/**
 * What a destroy run did, socket by socket, and how the kernel's answers are classified. The rule
 * "ENOENT on destroy means already gone" lives here and nowhere else.
 */

import { INET_PROTOCOLS } from "../diag/constants.js";
import type { Protocol, Socket } from "../diag/socket.js";
import { describeErrno, Errno, errnoName } from "../sys/errors.js";

/** One socket the kernel refused to destroy. */
export interface DestroyFailure {
  socket: Socket;
  errno: number;
  code: string;
  message: string;
}

/** Why further destroys were not attempted: one entry per cause, not one per socket. */
export interface DestroyStop {
  /** The protocol concerned; undefined when every protocol is concerned (EPERM). */
  protocol?: Protocol | undefined;
  code: string;
  reason: string;
}

/**
 * The outcome of destroySockets. Every matched socket is counted exactly once:
 * matched = destroyed + gone + failed.length + skipped (in a dry run, nothing but `matched`).
 */
export interface DestroyReport {
  /** Sockets that matched the query, filter and predicate. */
  matched: number;
  destroyed: number;
  /** Closed or replaced between the dump and the destroy (ENOENT): not a failure. */
  gone: number;
  failed: DestroyFailure[];
  /** Matched but not attempted, because a `stops` entry made the attempt pointless. */
  skipped: number;
  stops: DestroyStop[];
  dryRun: boolean;
}

/** What happened to one matched socket; "matched" is a dry run's only outcome. */
export type DestroyOutcome = "destroyed" | "gone" | "failed" | "skipped" | "matched";

/** A report with nothing counted yet. */
export function emptyReport(dryRun: boolean): DestroyReport {
  return { matched: 0, destroyed: 0, gone: 0, failed: [], skipped: 0, stops: [], dryRun };
}

/** A report's counts alone: matched = destroyed + gone + failed + skipped. */
export interface DestroyCounts {
  matched: number;
  destroyed: number;
  gone: number;
  /** The failures themselves, as in every report: count them with `.length`. */
  failed: DestroyFailure[];
  skipped: number;
}

/** Counts with nothing counted. */
export function emptyCounts(): DestroyCounts {
  return { matched: 0, destroyed: 0, gone: 0, failed: [], skipped: 0 };
}

/** Add the counts (and failures) of `other`, counts or a report, into `total`. */
export function addCounts(total: DestroyCounts, other: DestroyCounts | DestroyReport): void {
  total.matched += other.matched;
  total.destroyed += other.destroyed;
  total.gone += other.gone;
  total.failed.push(...other.failed);
  total.skipped += other.skipped;
}

/** Count one socket's outcome (with its failure, for "failed"); a dry run's "matched" counts as matched only. */
export function countOutcome(counts: DestroyCounts, outcome: DestroyOutcome, failure?: DestroyFailure): void {
  counts.matched++;
  if (outcome === "failed") {
    if (failure) counts.failed.push(failure);
  } else if (outcome !== "matched") counts[outcome]++;
}

/** Add `other` into `total` (for totals over namespaces). */
export function addReport(total: DestroyReport, other: DestroyReport): void {
  total.matched += other.matched;
  total.destroyed += other.destroyed;
  total.gone += other.gone;
  total.failed.push(...other.failed);
  total.skipped += other.skipped;
  for (const stop of other.stops) {
    if (!total.stops.some((s) => s.code === stop.code && s.protocol === stop.protocol))
      total.stops.push(stop);
  }
}

/** The explanation of an errno answered to SOCK_DESTROY for `protocol`. */
export function destroyErrorMessage(errno: number, protocol: Protocol): string {
  if (errno === Errno.EPERM)
    return "destroying sockets needs CAP_NET_ADMIN in the socket's network namespace";
  if (errno === Errno.EOPNOTSUPP) {
    return protocol !== "unix" && INET_PROTOCOLS[protocol].destroyable
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
