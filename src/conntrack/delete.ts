/**
 * deleteConntrack: the write half of the conntrack library. One dump per namespace finds the
 * entries; they are deleted in batches while the dump streams (on a second socket when a batch
 * fills mid-dump, on the dump's own once it is over), so memory does not grow with the table.
 */

import type { ConntrackEntry, EntrySpans } from "../ctnl/index.js";
import type { NetlinkOpener, Target } from "../netns/index.js";
import type { KnownKeys } from "../options/index.js";
import {
  addTally,
  checkRunOptions,
  EmptySelectionError,
  guardListener,
  RUN_OPTION_KEYS,
  type RunKind,
  type RunOptions,
  runInTarget,
  runToEnd,
} from "../run/index.js";
import type { SockdiagError } from "../sys/errors.js";
import { EntryDeleter, type EntryOutcomeListener } from "./deleter.js";
import { ConntrackUnavailableError } from "./errors.js";
import { CONNTRACK_QUERY_KEYS, type ConntrackQuery, planConntrack } from "./query.js";
import { type ConntrackDeleteReport, type ConntrackReport, emptyConntrackReport } from "./report.js";
import { ConntrackScan, noteOf } from "./scan.js";

/**
 * What deleteConntrack deletes, and how (see RunOptions: predicate, all, dryRun, batchSize — 1024
 * DELETE requests per write by default — and signal).
 */
export interface DeleteConntrackQuery extends ConntrackQuery, RunOptions<ConntrackEntry> {
  /** Told the outcome of every matched entry, as it happens. */
  onOutcome?: EntryOutcomeListener;
}

const DELETE_QUERY_KEYS: KnownKeys<DeleteConntrackQuery> = {
  ...CONNTRACK_QUERY_KEYS,
  ...RUN_OPTION_KEYS,
  onOutcome: true,
};

/**
 * Delete every conntrack entry matching `query` (and its predicate), exactly: by the entry's own
 * tuple and id. Returns per-namespace and total counts: deleted, gone (ENOENT: expired or replaced
 * since the dump), failed (with errno), skipped. Throws EmptySelectionError (unless `all` or a
 * predicate) or ConntrackQueryError / QueryError before sending anything; for a single namespace,
 * the errors of opening it; PredicateError when the predicate throws; AbortError when the signal
 * aborts. A namespace failing after deleting began is recorded in `failures` with its
 * counts; one without conntrack is a note.
 */
export function deleteConntrack(query: DeleteConntrackQuery): ConntrackDeleteReport {
  return runToEnd(entryDelete(query)(query.onOutcome), query);
}

/**
 * A conntrack delete checked and planned once, for a caller that walks the namespaces itself and
 * deletes in each as it goes (a backend terminator): what prepareConntrackDelete returns.
 */
export interface PreparedConntrackDelete {
  /**
   * deleteConntrack in `target`, with the outcomes told to `onOutcome` instead of the query's;
   * `entries`: the namespace's entry count when the caller read it already (not read again).
   * Throws as deleteConntrack does for a single namespace.
   */
  runIn(target: Target, onOutcome?: EntryOutcomeListener, entries?: number): ConntrackDeleteReport;
}

/**
 * `query` checked and planned once (its own `netns` is not used). Throws as deleteConntrack does
 * before sending anything.
 */
export function prepareConntrackDelete(
  query: DeleteConntrackQuery,
  open?: NetlinkOpener,
): PreparedConntrackDelete {
  const kindFor = entryDelete(query, open);
  return { runIn: (target, onOutcome, entries) => runInTarget(kindFor(onOutcome, entries), query, target) };
}

/**
 * Deleting the entries of `query`, as the runner drives it, for each listener of outcomes: the
 * query is checked whole and planned once, here.
 */
function entryDelete(
  query: DeleteConntrackQuery,
  opener?: NetlinkOpener,
): (
  onOutcome: EntryOutcomeListener | undefined,
  entries?: number,
) => RunKind<ConntrackEntry, [ConntrackEntry, Buffer, EntrySpans], ConntrackScan, ConntrackReport> {
  checkRunOptions(query, DELETE_QUERY_KEYS);
  const plan = planConntrack(query);
  if (!plan.narrow && !plan.nothing && !query.predicate && query.all !== true)
    throw new EmptySelectionError("query", "(no address, port, zone or mark)", "delete every entry");
  const { batchSize, signal } = query;
  return (listener, entries) => {
    const callbackErrors: SockdiagError[] = [];
    const onOutcome = guardListener(listener, callbackErrors);
    return {
      verb: "delete",
      nothing: plan.nothing,
      open: (target: Target) => new ConntrackScan(target, plan, opener, entries),
      // One dump with a callback per entry: no step between receive batches.
      scan: (scan, visit) => {
        scan.each(visit);
        return [];
      },
      batcher: (scan, connect) =>
        new EntryDeleter(connect, scan.conn.receiveQueueBytes, { batchSize, onOutcome, signal }),
      emptyReport: emptyConntrackReport,
      add: (total, part) => addTally(total, part),
      would: "wouldDelete",
      onWould: onOutcome && ((e) => onOutcome(e, "wouldDelete")),
      noteOf: (err, target) => (err instanceof ConntrackUnavailableError ? noteOf(target, err) : undefined),
      callbackErrors,
    };
  };
}
