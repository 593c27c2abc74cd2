/**
 * What a backend termination reports: per backend, per namespace and in total, sockets and
 * conntrack entries counted apart, every count balanced.
 */
import type { ConntrackEntry } from "../ctnl/index.js";
import type { NamespaceFailure, NamespaceNote } from "../netns/index.js";
import { addTally, emptyTally, type Tally } from "../run/index.js";
import type { DestroyReport } from "../sockets/index.js";
import type { SockdiagError } from "../sys/errors.js";
import type { OnePassSummary } from "./one-pass.js";

/** Which sockets a backend covers: its connected UDP sockets, TCP sockets, or both. */
export type BackendProtocol = "udp" | "tcp" | "any";

/** A backend as a report names it: canonical address text, port and protocol. */
export interface BackendName {
  address: string;
  port: number;
  protocol: BackendProtocol;
}

/** What happened in one namespace of a termination. */
export interface NamespaceResult {
  /** The namespace's name; "(host)" for the caller's own. */
  netns: string;
  /** Undefined when the namespace could not be visited (see `error`) or was skipped. */
  report?: DestroyReport;
  /** Why the namespace could not be visited or listed. */
  error?: SockdiagError;
  /** Not attempted: an earlier answer showed the kernel cannot destroy sockets. */
  skipped?: boolean;
  /** Conntrack entries DNATed to the backends, counted apart from sockets (when conntrack is on). */
  conntrack?: Tally<ConntrackEntry>;
  /** Why the conntrack step failed in this namespace. */
  conntrackError?: SockdiagError;
  /** Why the conntrack step passed this namespace over (nothing to delete; not a failure). */
  conntrackNote?: NamespaceNote<string>;
  /** How the one pass decided this namespace: sockets destroyed as found, walked, or ruled out. */
  onePass?: string;
  /** Ruled out by the one pass: not entered (nothing to destroy, no conntrack entry); counts are 0. */
  ruledOut?: boolean;
}

/** What happened in one namespace of a batch: also the counts of each backend, in `backends` order. */
export interface BatchNamespaceResult extends NamespaceResult {
  /** Per backend (index-aligned with BatchTerminationReport.backends); they sum to `report`'s counts. */
  backends: Tally[];
}

/** One backend of a batch and its counts over every namespace. */
export interface BackendResult {
  backend: BackendName;
  total: Tally;
  /** Its conntrack entries over every namespace (when conntrack is on and it covers UDP). */
  conntrack?: Tally<ConntrackEntry>;
}

/** What the two termination reports share: totals, failed namespaces, the kernel's verdict, ok. */
export interface ReportCommon {
  total: Tally;
  /** Conntrack entries over every namespace, apart from sockets (when conntrack is on). */
  conntrack?: Tally<ConntrackEntry>;
  /** Namespaces the walk could not give: an unreadable directory, an entry that is not a namespace, ... */
  failures: NamespaceFailure[];
  /**
   * Namespaces the walk passed over without that being a failure: one that vanished between being
   * listed and being opened had no socket left to destroy; a pin that is a plain file or a dangling
   * symlink holds no namespace.
   */
  notes: NamespaceNote<string>[];
  /**
   * What the logger or onNamespace threw. A callback's exception never ends the walk nor fails a
   * namespace; it is kept here (and does not change `ok`).
   */
  callbackErrors: SockdiagError[];
  /** Which path the run took (one pass or a walk of every namespace), and why. */
  onePass?: OnePassSummary;
  /** Set when the kernel answered EOPNOTSUPP: it cannot destroy these sockets, and no more attempts were made. */
  unsupported?: string;
  /**
   * True when everything matched (sockets and conntrack entries) was destroyed, deleted or already
   * gone, and no namespace failed (notes are no failure).
   */
  ok: boolean;
}

/** The outcome of terminate(). */
export interface TerminationReport extends ReportCommon {
  backend: BackendName;
  namespaces: NamespaceResult[];
}

/**
 * The outcome of terminateMany(): per backend and per namespace, both balanced — each backend's
 * total is the sum of its counts in `namespaces`, and `total` the sum of every backend's.
 */
export interface BatchTerminationReport extends ReportCommon {
  /** Distinct backends, in first-seen order. */
  backends: BackendResult[];
  namespaces: BatchNamespaceResult[];
}

/** A one-backend batch report as terminate() reports it. */
export function singleReport(batch: BatchTerminationReport): TerminationReport {
  const { backends, namespaces, ...common } = batch;
  return {
    backend: backends[0]!.backend,
    namespaces: namespaces.map(({ backends: _, ...n }) => n),
    ...common,
  };
}

/**
 * A batch report with nothing counted, for `backends`; with conntrack tallies where `conntrack` is
 * on (for the backends whose protocol covers UDP).
 */
export function emptyBatchReport(
  backends: readonly BackendName[],
  conntrack: boolean,
): BatchTerminationReport {
  return {
    backends: backends.map((backend) => ({
      backend,
      total: emptyTally(),
      ...(conntrack && backend.protocol !== "tcp" ? { conntrack: emptyTally("deleted") } : {}),
    })),
    namespaces: [],
    total: emptyTally(),
    ...(conntrack ? { conntrack: emptyTally("deleted") } : {}),
    failures: [],
    notes: [],
    callbackErrors: [],
    ok: true,
  };
}

/**
 * Add one namespace's result to `report`: the namespace in order, its counts into every total (per
 * backend, sockets and conntrack entries), so that each total is the sum of the namespaces'.
 */
export function addNamespace(
  report: BatchTerminationReport,
  result: BatchNamespaceResult,
  conntrack: readonly Tally<ConntrackEntry>[] | undefined,
): void {
  report.namespaces.push(result);
  if (result.report) {
    addTally(report.total, result.report);
    result.backends.forEach((t, i) => {
      addTally(report.backends[i]!.total, t);
    });
  }
  if (result.conntrack && report.conntrack) addTally(report.conntrack, result.conntrack);
  conntrack?.forEach((t, i) => {
    const total = report.backends[i]!.conntrack;
    if (total) addTally(total, t);
  });
}

/** Whether everything matched was done and nothing failed (see ReportCommon.ok). */
export function reportOk(report: BatchTerminationReport): boolean {
  return (
    report.total.failed.length === 0 &&
    (report.conntrack?.failed.length ?? 0) === 0 &&
    report.failures.length === 0 &&
    report.namespaces.every((n) => !n.error && !n.conntrackError)
  );
}
