/**
 * Report shapes: what a destroy run, a conntrack delete and a backend termination return, and the
 * arithmetic of their counts. Every count balances — matched = done + gone + failed.length +
 * skipped, where done is `destroyed` for sockets and `deleted` for conntrack entries — and `failed`
 * is always the list of failure records (the socket or entry, the kernel's errno, its name, why).
 * A namespace that failed, or was passed over with a note, is a NamespaceFailure everywhere.
 */
import type { ConntrackEntry } from "./ctnl/index.js";
import type { Protocol, Socket } from "./diag/socket.js";
import type { NamespaceFailure } from "./netns/index.js";
import type { SockdiagError } from "./sys/errors.js";

export type { NamespaceFailure };

/** What the kernel answered for one socket or entry it refused. */
interface Refusal {
  errno: number;
  /** The errno name, e.g. "EPERM". */
  code: string;
  message: string;
}

/** One socket the kernel refused to destroy. */
export interface DestroyFailure extends Refusal {
  socket: Socket;
}

/** One conntrack entry the kernel refused to delete. */
export interface ConntrackFailure extends Refusal {
  entry: ConntrackEntry;
}

/** What every tally counts beside what it did (destroyed or deleted). */
interface Counted<F> {
  /** Matched the query, filter and predicate. */
  matched: number;
  /** Closed, expired or replaced between the dump and the request (ENOENT): not a failure. */
  gone: number;
  /** The failures themselves: count them with `.length`. */
  failed: F[];
  /** Matched but not attempted, because an earlier answer made the attempt pointless. */
  skipped: number;
}

/** Counts of sockets: matched = destroyed + gone + failed.length + skipped. */
export interface DestroyCounts extends Counted<DestroyFailure> {
  destroyed: number;
}

/** Counts of conntrack entries: matched = deleted + gone + failed.length + skipped. */
export interface ConntrackTally extends Counted<ConntrackFailure> {
  deleted: number;
}

/** What happened to one matched socket; "matched" is a dry run's only outcome. */
export type DestroyOutcome = "destroyed" | "gone" | "failed" | "skipped" | "matched";

/** What happened to one matched entry; "matched" is a dry run's only outcome. */
export type ConntrackOutcome = "deleted" | "gone" | "failed" | "skipped" | "matched";

/** Socket counts with nothing counted. */
export function emptyCounts(): DestroyCounts {
  return { matched: 0, destroyed: 0, gone: 0, failed: [], skipped: 0 };
}

/** Conntrack counts with nothing counted. */
export function emptyConntrackTally(): ConntrackTally {
  return { matched: 0, deleted: 0, gone: 0, failed: [], skipped: 0 };
}

function addCounted<F>(total: Counted<F>, other: Counted<F>): void {
  total.matched += other.matched;
  total.gone += other.gone;
  total.failed.push(...other.failed);
  total.skipped += other.skipped;
}

/** Add the counts (and failures) of `other`, counts or a report, into `total`. */
export function addCounts(total: DestroyCounts, other: DestroyCounts): void {
  addCounted(total, other);
  total.destroyed += other.destroyed;
}

/** Add `other` into `total` (per backend, per namespace, over namespaces). */
export function addConntrackTally(total: ConntrackTally, other: ConntrackTally): void {
  addCounted(total, other);
  total.deleted += other.deleted;
}

/** Count one outcome (with its failure, for "failed"); a dry run's "matched" counts as matched only. */
export function countOutcome(counts: DestroyCounts, outcome: DestroyOutcome, failure?: DestroyFailure): void;
export function countOutcome(
  counts: ConntrackTally,
  outcome: ConntrackOutcome,
  failure?: ConntrackFailure,
): void;
export function countOutcome(counts: Counted<unknown>, outcome: string, failure?: unknown): void {
  counts.matched++;
  if (outcome === "failed") {
    if (failure) counts.failed.push(failure);
  } else if (outcome !== "matched") (counts as unknown as Record<string, number>)[outcome]!++;
}

/** Why further destroys were not attempted: one entry per cause, not one per socket. */
export interface DestroyStop {
  /** The protocol concerned; undefined when every protocol is concerned (EPERM). */
  protocol?: Protocol | undefined;
  code: string;
  reason: string;
}

/** The outcome of destroySockets in one namespace or in total (in a dry run, nothing but `matched`). */
export interface DestroyReport extends DestroyCounts {
  stops: DestroyStop[];
  dryRun: boolean;
}

/** A destroy report that also says which namespaces could not be visited (netns "all"). */
export interface NamespacedDestroyReport extends DestroyReport {
  namespaceFailures: NamespaceFailure[];
}

/** A destroy report with nothing counted yet. */
export function emptyReport(dryRun: boolean): DestroyReport {
  return { ...emptyCounts(), stops: [], dryRun };
}

/** Add `other` into `total` (for totals over namespaces): counts, failures, and stops not there yet. */
export function addReport(total: DestroyReport, other: DestroyReport): void {
  addCounts(total, other);
  for (const stop of other.stops) {
    if (!total.stops.some((s) => s.code === stop.code && s.protocol === stop.protocol))
      total.stops.push(stop);
  }
}

/** The outcome of a conntrack delete, in one namespace or in total. */
export interface ConntrackReport extends ConntrackTally {
  dryRun: boolean;
}

/** A conntrack report with nothing counted yet. */
export function emptyConntrackReport(dryRun: boolean): ConntrackReport {
  return { ...emptyConntrackTally(), dryRun };
}

/** One namespace's part of a conntrack delete. */
export interface ConntrackNamespaceReport extends ConntrackReport {
  /** The namespace's label; "(host)" for the caller's own. */
  netns: string;
}

/**
 * A namespace where conntrack could not be asked (no nfnetlink / ctnetlink): a NamespaceFailure
 * with the note "no-conntrack" and a ConntrackUnavailableError — nothing to delete, no failure.
 */
export type ConntrackNote = NamespaceFailure;

/** The outcome of deleteConntrack: the total, and each namespace visited. */
export interface ConntrackDeleteReport extends ConntrackReport {
  namespaces: ConntrackNamespaceReport[];
  /** Namespaces that could not be visited, or failed half way (their counts are in the report). */
  namespaceFailures: NamespaceFailure[];
  /** Namespaces without conntrack: nothing to delete there. */
  notes: ConntrackNote[];
}

/** Which sockets a backend covers: its connected UDP sockets, TCP sockets, or both. */
export type BackendProtocol = "udp" | "tcp" | "any";

/** A backend as a report names it: canonical address text, port and protocol. */
export interface BackendName {
  address: string;
  port: number;
  protocol: BackendProtocol;
}

/** Socket counts of one backend, namespace or termination run. */
export type Tally = DestroyCounts;

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
  conntrack?: ConntrackTally;
  /** Why the conntrack step failed in this namespace. */
  conntrackError?: SockdiagError;
  /** This namespace has no conntrack (nothing to delete; not a failure). */
  conntrackNote?: string;
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
  conntrack?: ConntrackTally;
}

/** What the two termination reports share: totals, source errors, the kernel's verdict, ok. */
export interface ReportCommon {
  total: Tally;
  /** Conntrack entries over every namespace, apart from sockets (when conntrack is on). */
  conntrack?: ConntrackTally;
  /**
   * Namespaces the source could not give: an unreadable directory, an entry that is not a
   * namespace, ... Those with a `note` are no failure (a namespace that vanished, a pin not yet or
   * no longer mounted).
   */
  sourceErrors: NamespaceFailure[];
  /**
   * What the logger or onNamespace threw. A callback's exception never ends the walk nor fails a
   * namespace; it is kept here (and does not change `ok`).
   */
  callbackErrors: SockdiagError[];
  /** Set when the kernel answered EOPNOTSUPP: it cannot destroy these sockets, and no more attempts were made. */
  unsupported?: string;
  /**
   * True when everything matched (sockets and conntrack entries) was destroyed, deleted or already
   * gone, no namespace failed, and every source error has a note: a namespace removed between being
   * listed and being opened had no socket left to destroy, a pin that is a plain file or a dangling
   * symlink holds no namespace.
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
