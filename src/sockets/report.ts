/** What destroySockets reports: the tally of sockets, why attempts stopped, over namespaces. */
import type { Protocol } from "../diag/socket.js";
import { addTally, emptyTally, type RunReport, type Tally } from "../run/index.js";

/** Why further destroys were not attempted: one entry per cause, not one per socket. */
export interface DestroyStop {
  /** The protocol concerned; undefined when every protocol is concerned (EPERM). */
  protocol?: Protocol | undefined;
  code: string;
  reason: string;
}

/**
 * The outcome of destroySockets in one namespace or in total (in a dry run, `wouldDestroy` counts
 * what it found, `destroyed` stays 0: the report balances either way).
 */
export interface DestroyReport extends Tally {
  stops: DestroyStop[];
  dryRun: boolean;
}

/**
 * What destroySockets returns: the total, each namespace visited, the namespaces that failed and
 * those passed over.
 */
export type NamespacedDestroyReport = RunReport<DestroyReport>;

/** A destroy report with nothing counted yet. */
export function emptyReport(dryRun: boolean): DestroyReport {
  // Added to the tally, not spread with it into another object: see emptyRunReport (run/).
  return Object.assign(emptyTally(), { stops: [], dryRun });
}

/** Add `other` into `total` (for totals over namespaces): counts, failures, and stops not there yet. */
export function addReport(total: DestroyReport, other: DestroyReport): void {
  addTally(total, other);
  for (const stop of other.stops) {
    if (!total.stops.some((s) => s.code === stop.code && s.protocol === stop.protocol))
      total.stops.push(stop);
  }
}
