/**
 * The worker pool's reports (pool.ts): one termination run's reports from several threads, each of
 * which visited a share of the namespaces, made into the report one thread visiting them all would
 * give: namespaces in the walk's order, every total the sum of its parts (so it balances as each
 * part does).
 */
import type { NamespaceFailure, NamespaceNote } from "../netns/index.js";
import { addTally } from "../run/index.js";
import { type BatchTerminationReport, emptyBatchReport } from "../terminator/index.js";

/** One thread's report, and the place in the walk of each namespace it visited, in its order. */
export interface ReportPart {
  report: BatchTerminationReport;
  /** places[i]: where report.namespaces[i] stands among every namespace of the walk. */
  places: readonly number[];
}

/**
 * The merged report. `walk`: what listing the namespaces met (failures and notes of the walk
 * itself, before any was shared out). Every part ran the same backends, so `backends` align.
 */
export function mergeReports(
  parts: readonly ReportPart[],
  walk: { failures: readonly NamespaceFailure[]; notes: readonly NamespaceNote<string>[] },
): BatchTerminationReport {
  const first = parts[0]!.report;
  const merged = emptyBatchReport(
    first.backends.map((b) => b.backend),
    first.conntrack !== undefined,
  );
  merged.failures.push(...walk.failures);
  merged.notes.push(...walk.notes);
  const placed: [number, BatchTerminationReport["namespaces"][number]][] = [];
  for (const { report, places } of parts) {
    report.namespaces.forEach((n, i) => {
      placed.push([places[i]!, n]);
    });
    addTally(merged.total, report.total);
    if (merged.conntrack && report.conntrack) addTally(merged.conntrack, report.conntrack);
    report.backends.forEach((b, i) => {
      const into = merged.backends[i]!;
      addTally(into.total, b.total);
      if (into.conntrack && b.conntrack) addTally(into.conntrack, b.conntrack);
    });
    merged.failures.push(...report.failures);
    merged.notes.push(...report.notes);
    merged.callbackErrors.push(...report.callbackErrors);
    if (report.unsupported && !merged.unsupported) merged.unsupported = report.unsupported;
  }
  merged.namespaces = placed.sort((a, b) => a[0] - b[0]).map(([, n]) => n);
  merged.ok = parts.every((p) => p.report.ok) && walk.failures.length === 0;
  return merged;
}
