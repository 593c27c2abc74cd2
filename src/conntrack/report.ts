/** What deleteConntrack reports: the tally of entries, per namespace and in total. */
import type { ConntrackEntry } from "../ctnl/index.js";
import { emptyTally, type NamespaceNote, type RunReport, type Tally } from "../run/index.js";

/** The outcome of a conntrack delete, in one namespace or in total. */
export interface ConntrackReport extends Tally<ConntrackEntry> {
  dryRun: boolean;
}

/** A conntrack report with nothing counted yet. */
export function emptyConntrackReport(dryRun: boolean): ConntrackReport {
  return { ...emptyTally("deleted"), dryRun };
}

/** Why conntrack passes a namespace over: its own reason, or the walk's (vanished, ...). */
export type ConntrackNote = NamespaceNote<NamespaceNote["skipped"] | "no-conntrack">;

/**
 * What deleteConntrack returns: the total, each namespace visited, the namespaces that failed,
 * and those passed over — without conntrack ("no-conntrack": nothing to delete there), vanished.
 */
export type ConntrackDeleteReport = RunReport<ConntrackReport>;
