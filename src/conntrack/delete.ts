/**
 * deleteConntrack: the write half of the conntrack library. One dump per namespace finds the
 * entries; they are deleted in batches while the dump streams (on a second socket when a batch
 * fills mid-dump, on the dump's own once it is over), so memory does not grow with the table.
 */
import type { ConntrackEntry } from "../ctnl/index.js";
import type { NetlinkConnection } from "../netlink/index.js";
import { addConntrackTally, type ConntrackDeleteReport, emptyConntrackReport } from "../report.js";
import {
  AbortError,
  type AbortSignalLike,
  approves,
  PredicateError,
  PredicateThrew,
} from "../sockets/errors.js";
import { checkRunOptions, type KnownKeys } from "../sockets/options.js";
import { isNamespaceScoped, recordOrThrow, targetsOf } from "../sockets/query.js";
import { EntryDeleter, type EntryOutcomeListener } from "./deleter.js";
import { EmptySelectionError } from "./errors.js";
import { noteOf } from "./iterate.js";
import { CONNTRACK_QUERY_KEYS, type ConntrackQuery, planConntrack } from "./query.js";
import { ConntrackScan, ConntrackUnavailableError } from "./scan.js";

/** What deleteConntrack deletes, and how. */
export interface DeleteConntrackQuery extends ConntrackQuery {
  /**
   * Called with each matching entry; return false to keep it. Must be synchronous. An exception it
   * throws ends the run: it is rethrown as PredicateError, which carries the report so far.
   */
  predicate?: (entry: ConntrackEntry) => boolean;
  /** Find and count, delete nothing. */
  dryRun?: boolean;
  /** Allow a selection without address, port, zone or mark: every entry of the protocol/family. */
  all?: boolean;
  /** DELETE requests per write (default 1024). */
  batchSize?: number;
  /** Told the outcome of every matched entry, as it happens. */
  onOutcome?: EntryOutcomeListener;
  /**
   * Checked before each namespace and each write: once aborted, nothing more is sent and AbortError
   * is thrown with the report so far (entries found but not sent counted as skipped).
   */
  signal?: AbortSignalLike;
}

const DELETE_QUERY_KEYS: KnownKeys<DeleteConntrackQuery> = {
  ...CONNTRACK_QUERY_KEYS,
  predicate: true,
  dryRun: true,
  all: true,
  batchSize: true,
  onOutcome: true,
  signal: true,
};

/**
 * Delete every conntrack entry matching `query` (and its predicate), exactly: by the entry's own
 * tuple and id. Returns per-namespace and total counts: deleted, gone (ENOENT: expired or replaced
 * since the dump), failed (with errno), skipped. Throws EmptySelectionError (unless `all`) or
 * ConntrackQueryError / QueryError before sending anything; for a single namespace, the errors of
 * opening it; PredicateError when the predicate throws.
 * A namespace failing after deleting began is recorded in `namespaceFailures` with its counts.
 */
export function deleteConntrack(query: DeleteConntrackQuery): ConntrackDeleteReport {
  const plan = planConntrack(query, DELETE_QUERY_KEYS);
  checkRunOptions(query);
  if (!plan.narrow && !plan.nothing && !query.all) throw new EmptySelectionError();
  const dryRun = Boolean(query.dryRun);
  const total: ConntrackDeleteReport = {
    ...emptyConntrackReport(dryRun),
    namespaces: [],
    namespaceFailures: [],
    notes: [],
  };
  if (plan.nothing) return total;
  try {
    for (const target of targetsOf(query.netns, query, total.namespaceFailures)) {
      if (query.signal?.aborted) throw new AbortError(query.signal);
      try {
        using scan = new ConntrackScan(target, plan);
        deleteIn(scan, query, total);
      } catch (err) {
        if (err instanceof PredicateThrew) throw new PredicateError(total, err.cause, "delete");
        if (err instanceof ConntrackUnavailableError) total.notes.push(noteOf(target.label, err));
        else recordOrThrow(query.netns, target, err, total.namespaceFailures);
      }
    }
  } catch (err) {
    if (err instanceof AbortError) err.report = total;
    throw err;
  }
  return total;
}

/** Delete in one namespace; its counts go into `total` also when it fails half way. */
function deleteIn(scan: ConntrackScan, query: DeleteConntrackQuery, total: ConntrackDeleteReport): void {
  const { predicate, onOutcome } = query;
  let second: NetlinkConnection | undefined;
  const connect = (): NetlinkConnection => {
    second ??= scan.openAnother();
    return second;
  };
  const deleter = query.dryRun
    ? undefined
    : new EntryDeleter(connect, scan.conn.receiveQueueBytes, {
        batchSize: query.batchSize,
        onOutcome,
        signal: query.signal,
      });
  const report = deleter?.report ?? emptyConntrackReport(true);
  try {
    scan.each((entry, buf, tuple) => {
      if (predicate && !approves(predicate, entry)) return;
      if (deleter) return deleter.add(entry, buf, tuple);
      if (query.signal?.aborted) throw new AbortError(query.signal);
      report.matched++;
      onOutcome?.(entry, "matched");
    });
    deleter?.flush(scan.conn);
  } catch (err) {
    if (err instanceof PredicateThrew) deleter?.stop();
    if (err instanceof ConntrackUnavailableError || !isNamespaceScoped(err)) throw err;
    total.namespaceFailures.push({ netns: scan.target.label ?? "(host)", error: err });
  } finally {
    second?.close();
    addConntrackTally(total, report);
    total.namespaces.push({ netns: scan.target.label ?? "(host)", ...report, failed: [...report.failed] });
  }
}
