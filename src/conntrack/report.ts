/**
 * What a conntrack delete did, entry by entry, and how the kernel's answers are classified: ENOENT
 * means the entry is gone already (expired, or its tuple now names a new entry with another id).
 */
import type { ConntrackEntry } from "../ctnl/index.js";
import { describeErrno, Errno, errnoName } from "../sys/errors.js";

/** One entry the kernel refused to delete. */
export interface ConntrackFailure {
  entry: ConntrackEntry;
  errno: number;
  code: string;
  message: string;
}

/**
 * The outcome of a delete, in one namespace or in total. Every matched entry is counted once:
 * matched = deleted + gone + failed.length + skipped (in a dry run, nothing but `matched`).
 */
/** Counts of conntrack entries: matched = deleted + gone + failed.length + skipped. */
export interface ConntrackTally {
  matched: number;
  deleted: number;
  /** Expired or replaced between the dump and the delete (ENOENT): not a failure. */
  gone: number;
  failed: ConntrackFailure[];
  /** Not attempted after an answer that holds for every entry (EPERM). */
  skipped: number;
}

export interface ConntrackReport extends ConntrackTally {
  dryRun: boolean;
}

/** What happened to one matched entry; "matched" is a dry run's only outcome. */
export type ConntrackOutcome = "deleted" | "gone" | "failed" | "skipped" | "matched";

export function emptyConntrackTally(): ConntrackTally {
  return { matched: 0, deleted: 0, gone: 0, failed: [], skipped: 0 };
}

export function emptyConntrackReport(dryRun: boolean): ConntrackReport {
  return { ...emptyConntrackTally(), dryRun };
}

/** Add `other` into `total` (per backend, per namespace, over namespaces). */
export function addConntrackTally(total: ConntrackTally, other: ConntrackTally): void {
  total.matched += other.matched;
  total.deleted += other.deleted;
  total.gone += other.gone;
  total.failed.push(...other.failed);
  total.skipped += other.skipped;
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
