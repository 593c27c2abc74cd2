/**
 * What a termination does in one namespace: destroy the sockets connected to the run's backends
 * (each outcome counted for its backend), then delete the conntrack entries DNATed to them. It
 * returns that namespace's result and never throws for what happens there — a namespace that cannot
 * be opened, a kernel answer, a predicate that throws are in the result — so the run's report adds
 * results up and balances by construction. Only what ends the whole run goes past it: a failed
 * return to the caller's own namespace, and the caller's signal (as `stopped`, with the result of
 * what was done before it).
 */

import type { ConntrackEntry } from "../conntrack/index.js";
import type { InetSocket, Socket } from "../diag/socket.js";
import { isFatalNetnsError, type Target, targetLabel } from "../netns/index.js";
import {
  AbortError,
  countOutcome,
  type DestroyFailure,
  emptyTally,
  type Outcome,
  PredicateError,
  type Tally,
} from "../run/index.js";
import {
  type DestroyQuery,
  type DestroyReport,
  type DestroyStop,
  emptyReport,
  type NamespacedDestroyReport,
  type PreparedDestroy,
  type Scan,
} from "../sockets/index.js";
import { asSockdiagError } from "../sys/errors.js";
import type { BackendSet } from "./backend-set.js";
import type { ConntrackStep } from "./conntrack-step.js";
import type { NamespaceVerdict } from "./one-pass.js";
import type { BatchNamespaceResult } from "./report.js";

/** Where the step's log lines go; it must not throw (the terminator's guards its logger). */
export type StepLog = (level: "info" | "warn", message: string, fields: Record<string, unknown>) => void;

/** One namespace's termination, as the run adds it up. */
export interface StepResult {
  /** The namespace's result; undefined when the signal stopped the run before it began there. */
  result?: BatchNamespaceResult;
  /** Its conntrack entries per backend (index-aligned with the run's), when the conntrack step ran. */
  conntrack?: Tally<ConntrackEntry>[];
  /** The kernel answered EOPNOTSUPP: it cannot destroy these sockets (the reason). */
  unsupported?: string;
  /** The caller's signal stopped the run here: nothing more is to be done. */
  stopped?: AbortError;
}

/** A termination's work in one namespace, for one run's backends. */
export class NamespaceTermination {
  constructor(
    private readonly set: BackendSet,
    /** The run's destroy, prepared once (prepareDestroy). */
    private readonly destroy: Pick<PreparedDestroy, "runIn"> & Partial<Pick<PreparedDestroy, "runFound">>,
    private readonly conntrack: ConntrackStep | undefined,
    private readonly dryRun: boolean,
    private readonly log: StepLog,
  ) {}

  /**
   * The termination in `target`, on `opened` when its scan was opened ahead (then closed here);
   * `skip` when an earlier namespace showed the kernel cannot destroy sockets; `verdict` when the
   * one pass decided the namespace (its found sockets destroyed instead of a walk, or none; its
   * conntrack step left out where its count is 0). Throws only a fatal namespace error.
   */
  runIn(
    target: Target,
    opened: Scan | undefined,
    skip: boolean,
    signal?: DestroyQuery["signal"],
    verdict?: NamespaceVerdict,
  ): StepResult {
    using ahead = opened;
    if (signal?.aborted) return { stopped: new AbortError(signal) };
    const { set } = this;
    const name = targetLabel(target);
    const result: BatchNamespaceResult = { netns: name, backends: set.backends.map(() => emptyTally()) };
    if (verdict) result.onePass = verdict.how;
    const step: StepResult = { result };
    if (skip) result.skipped = true;
    else if (verdict?.sockets === "none") result.report = emptyReport(this.dryRun);
    else {
      this.sockets(target, ahead, result, step, verdict?.sockets === "found" ? verdict.found : undefined);
      if (step.stopped) return step;
    }
    if (this.conntrack && verdict && !verdict.conntrack) {
      result.conntrack = emptyTally("deleted");
      result.conntrackNote = { netns: name, skipped: "one-pass", message: "its conntrack count is 0" };
      step.conntrack = set.backends.map(() => emptyTally("deleted"));
    } else if (this.conntrack)
      step.conntrack = this.conntrackIn(name, target, this.conntrack, result, verdict?.entries);
    return step;
  }

  /** The sockets of the run's backends in `target`, counted into `result`. */
  private sockets(
    target: Target,
    opened: Scan | undefined,
    result: BatchNamespaceResult,
    step: StepResult,
    found?: readonly InetSocket[],
  ): void {
    const { set } = this;
    // Each matched socket's outcome, counted for its backend (the one backend needs no lookup).
    const onOutcome = (s: Socket, outcome: Outcome, failure?: DestroyFailure) => {
      const i = set.size === 1 ? 0 : set.owner(s);
      if (i !== undefined) countOutcome(result.backends[i]!, outcome, failure);
    };
    let answer: NamespacedDestroyReport | undefined;
    try {
      const { runFound } = this.destroy;
      answer =
        found && runFound
          ? runFound(target, found, onOutcome)
          : this.destroy.runIn(target, onOutcome, opened);
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      if (err instanceof AbortError) {
        step.stopped = err;
        // Stopped before anything was done there: the namespace is not in the report.
        if (!err.report) {
          delete step.result;
          return;
        }
        // Stopped part-way: what this namespace did so far is counted.
        answer = err.report as NamespacedDestroyReport;
      } else if (err instanceof PredicateError) {
        // A predicate that threw still leaves the counts of what was destroyed before it.
        answer = err.report as NamespacedDestroyReport;
      }
      result.error = asSockdiagError(err);
    }
    if (answer) {
      const r = destroyReportOf(answer);
      result.report = r;
      // A failure after destroying began comes back with the partial report instead of thrown.
      const failure = answer.failures[0];
      if (failure && !result.error) result.error = failure.error;
      const unsupported = r.stops.find(isKernelUnsupported);
      if (unsupported) step.unsupported = unsupported.reason;
    }
    const counts =
      result.report && result.report.matched > 0
        ? loggedCounts(result.report, result.report.dryRun)
        : undefined;
    if (result.error)
      this.log("warn", "namespace failed", { netns: result.netns, error: result.error.message, ...counts });
    else if (counts) this.log("info", "terminated sockets", { netns: result.netns, ...counts });
  }

  /** The conntrack step in one namespace; it runs even where sockets could not be destroyed. */
  private conntrackIn(
    name: string,
    target: Target,
    conntrack: ConntrackStep,
    result: BatchNamespaceResult,
    entries: number | undefined,
  ): Tally<ConntrackEntry>[] {
    let backends = this.set.backends.map(() => emptyTally("deleted"));
    try {
      const step = conntrack.runIn(target, entries);
      result.conntrack = step.tally;
      if (step.error) result.conntrackError = step.error;
      if (step.note) result.conntrackNote = step.note;
      backends = step.backends;
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      result.conntrack = emptyTally("deleted");
      result.conntrackError = asSockdiagError(err);
    }
    const counts = result.conntrack.matched > 0 ? loggedCounts(result.conntrack, this.dryRun) : undefined;
    if (result.conntrackError)
      this.log("warn", "conntrack failed", { netns: name, error: result.conntrackError.message, ...counts });
    else if (counts) this.log("info", "deleted conntrack entries", { netns: name, ...counts });
    return backends;
  }
}

/** A step's counts as its log line gives them: in a dry run what would have been done, else what was. */
function loggedCounts(tally: Tally | Tally<ConntrackEntry>, dryRun: boolean): Record<string, number> {
  const [done, would] = "deleted" in tally ? ["deleted", "wouldDelete"] : ["destroyed", "wouldDestroy"];
  const key = dryRun ? would : done;
  const count = (tally as unknown as Record<string, number>)[key]!;
  return { matched: tally.matched, [key]: count, failed: tally.failed.length };
}

/** One namespace's destroy report out of what the destroyer answered (its walk's lists left out). */
function destroyReportOf(answer: NamespacedDestroyReport): DestroyReport {
  const { matched, destroyed, wouldDestroy, gone, failed, skipped, stops, dryRun } = answer;
  return { matched, destroyed, wouldDestroy, gone, failed, skipped, stops, dryRun };
}

/** EOPNOTSUPP for UDP/TCP means the kernel lacks CONFIG_INET_DIAG_DESTROY: no namespace will do better. */
function isKernelUnsupported(stop: DestroyStop): boolean {
  return stop.code === "EOPNOTSUPP";
}
