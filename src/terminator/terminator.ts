/**
 * BackendTerminator: when a load-balancer backend goes away, destroy every socket still connected
 * to it — in the host namespace and in every pod/container namespace — so that each owner's next
 * read fails with ECONNABORTED and it reconnects to a live backend. The behaviour follows Cilium's
 * TerminateUDPConnectionsToBackend, without its failure modes: every error is returned in the
 * report (never only logged), one namespace's failure never stops the others, and a kernel that
 * cannot destroy sockets is recognised once. For UDP backends it also deletes the conntrack entries
 * DNATed to them (conntrack-step.ts says why).
 */

import type { ConntrackEntry } from "../conntrack/index.js";
import { type InetSocket, isInetSocket, type Socket } from "../diag/socket.js";
import {
  checkNamespaceSelection,
  isFatalNetnsError,
  type NamespaceFailure,
  type NamespaceSelection,
  SELECTION_KEYS,
  type Target,
  targetLabel,
  targetsOf,
  type WalkFindings,
} from "../netns/index.js";
import { checkBoolean, checkOptions, type KnownKeys } from "../options/index.js";
import {
  AbortError,
  addTally,
  countOutcome,
  type DestroyFailure,
  emptyTally,
  type Outcome,
  PredicateError,
  type Tally,
} from "../run/index.js";
import { drain, type NamespaceStep, scheduleFor } from "../schedule/index.js";
import {
  type DestroyQuery,
  type DestroyReport,
  type DestroyStop,
  type NamespacedDestroyReport,
  prepareDestroy,
  type Scan,
} from "../sockets/index.js";
import { type AbortSignalLike, asSockdiagError, SockdiagError } from "../sys/errors.js";
import { type Backend, type BackendProtocol, parseBackend } from "./backend.js";
import { BackendSet } from "./backend-set.js";
import { type ConntrackDeleter, ConntrackStep } from "./conntrack-step.js";
import type {
  BatchNamespaceResult,
  BatchTerminationReport,
  NamespaceResult,
  ReportCommon,
  TerminationReport,
} from "./report.js";
import { singleReport } from "./report.js";
import { asError, guarded } from "./sources.js";

/**
 * Destroys the sockets of a query: the sockets library by default; tests inject faults here. It must
 * tell `query.onOutcome` each matched socket's outcome, as destroySockets does: a batch counts
 * sockets per backend from it.
 */
export type SocketsDestroyer = (query: DestroyQuery) => DestroyReport & Partial<NamespacedFailures>;

/**
 * The destroy of a run, namespace by namespace (PreparedDestroy's shape; a test's destroyer opens
 * nothing ahead).
 */
interface DestroyIn {
  runIn(
    target: Target,
    onOutcome: NonNullable<DestroyQuery["onOutcome"]>,
    opened?: Scan,
  ): ReturnType<SocketsDestroyer>;
  open?(target: Target): Scan;
  sendAhead?(scan: Scan): boolean;
}

/** A destroy report's record of the namespace that failed after destroying began. */
type NamespacedFailures = Pick<NamespacedDestroyReport, "failures">;

/** Where log lines go. Without one, BackendTerminator logs nothing (everything is in its report). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/**
 * BackendTerminator's configuration; every field is optional. Where it runs is a
 * NamespaceSelection whose `netns` defaults to "all": the caller's own namespace, then every one
 * pinned in `netnsDirs` (default: each of DEFAULT_NETNS_DIRS that exists), then every one a process
 * is in (unless `discover` is false). A handle, name or path visits that namespace alone; a handle
 * of the caller's own namespace (currentNetns()), only the caller's own.
 */
export interface TerminatorConfig extends NamespaceSelection {
  /** Protocol when terminate() is not told one. Default "udp". */
  protocol?: BackendProtocol;
  /**
   * Veto per socket: answer false to keep it, true to destroy it; any other answer is handled as a
   * throw (PredicateError in that namespace, the socket kept). Cilium checks its socket-LB map by
   * cookie here.
   */
  predicate?: (socket: InetSocket) => boolean;
  /** Count and report, destroy nothing. */
  dryRun?: boolean;
  logger?: Logger;
  /**
   * Called after each namespace, e.g. for a progress line ("namespace 37 of 412"): its place in the
   * walk, and how many namespaces the walk found when it started (some may vanish before their turn).
   */
  onNamespace?: (result: NamespaceResult, index: number, total: number | undefined) => void;
  /**
   * Also delete the UDP conntrack entries whose reply source is a backend (flows DNATed to it), in
   * every namespace visited. Default true; it concerns backends whose protocol covers UDP.
   */
  conntrack?: boolean;
}

/**
 * What tests put in place of the terminator's collaborators (BackendTerminator's second argument):
 * not configuration, and not part of sockdiag's public surface.
 */
export interface TerminatorSeam {
  /** The namespaces to visit, in order, telling `findings` what the walk met. Default: targetsOf. */
  targets?: (findings: WalkFindings) => Iterable<Target>;
  /** The destroying collaborator. Default: destroySockets. */
  destroy?: SocketsDestroyer;
  /** The conntrack collaborator. Default: deleteConntrack. */
  deleteConntrack?: ConntrackDeleter;
}

const noLogger: Logger = { info() {}, warn() {} };

const CONFIG_KEYS: KnownKeys<TerminatorConfig> = {
  ...SELECTION_KEYS,
  protocol: true,
  predicate: true,
  dryRun: true,
  logger: true,
  onNamespace: true,
  conntrack: true,
};

const TERMINATE_KEYS: KnownKeys<TerminateOptions> = { signal: true };

/**
 * Check a TerminatorConfig as a caller gave it (BackendTerminator's constructor, and
 * sockdiag/promises' before sending it to the worker): an object of known keys, its namespace
 * selection, flags that are booleans. Throws QueryError naming the field.
 */
export function checkTerminatorConfig(config: unknown): void {
  checkOptions(config, CONFIG_KEYS, "config");
  const c = config as TerminatorConfig;
  checkNamespaceSelection(c);
  for (const flag of ["dryRun", "conntrack"] as const) checkBoolean(c[flag], `config.${flag}`);
}

/** One run's backends, query and report under construction. */
interface Run {
  set: BackendSet;
  query: DestroyQuery;
  /** The query, checked and planned once, run in one namespace. */
  destroyIn: DestroyIn;
  report: BatchTerminationReport;
  /** The run's conntrack step, when it deletes conntrack entries. */
  conntrack: ConntrackStep | undefined;
  /** How many namespaces the walk found when it started. */
  total?: number;
}

/**
 * BackendTerminator destroys the sockets connected to backends that went away, in the host and in
 * every namespace of its source; built once with its configuration, used for every backend.
 */
export class BackendTerminator {
  private readonly config: TerminatorConfig;
  private readonly destroy: SocketsDestroyer | undefined;
  private readonly logger: Logger;
  private readonly deleteConntrack: ConntrackDeleter | undefined;
  private readonly targets: (findings: WalkFindings, onFound: (total: number) => void) => Iterable<Target>;

  /**
   * Throws QueryError for a malformed configuration: an unknown key, a flag that is not a boolean,
   * a namespace selection of the wrong kind.
   */
  constructor(config: TerminatorConfig = {}, seam: TerminatorSeam = {}) {
    checkTerminatorConfig(config);
    this.config = config;
    const selection: NamespaceSelection = { ...config, netns: config.netns ?? "all" };
    this.targets = seam.targets ?? ((findings, onFound) => targetsOf(selection, findings, onFound));
    this.destroy = seam.destroy;
    this.deleteConntrack = seam.deleteConntrack;
    this.logger = config.logger ?? noLogger;
  }

  /**
   * Destroy every connected socket whose destination is exactly the backend's address and port, in
   * every namespace of the configuration (the caller's own first). An IPv4 backend also matches
   * IPv6 sockets connected to its v4-mapped address. Unconnected sockets are never touched.
   * Throws AddressError for a bad address or port, QueryError for a forged namespace handle or a
   * NUL byte in a namespace's name or path, MisuseError for a handle closed since the configuration
   * was given — each before touching anything; NetnsRestoreError or
   * NetnsPoisonedError when the thread could not return to its own namespace. Every other failure
   * — a namespace named alone that cannot be opened included — is in the report.
   */
  terminate(backend: Backend, options: TerminateOptions = {}): TerminationReport {
    try {
      return singleReport(this.terminateMany([backend], options));
    } catch (err) {
      if (err instanceof AbortError && err.report)
        err.report = singleReport(err.report as BatchTerminationReport);
      throw err;
    }
  }

  /**
   * terminate() for many backends in one pass: each namespace is entered once, and listed with one
   * dump per protocol and family whose filter names every backend — not one dump per backend. Each
   * socket is counted for the backend it is connected to. Throws AddressError or QueryError naming
   * the first bad backend before touching anything; an empty list visits nothing. Other failures
   * as terminate().
   */
  terminateMany(backends: readonly Backend[], options: TerminateOptions = {}): BatchTerminationReport {
    checkOptions(options, TERMINATE_KEYS, "options");
    // A handle in the configuration may have been closed since it was checked.
    checkNamespaceSelection(this.config);
    const set = new BackendSet(backends, this.config.protocol ?? "udp");
    const report: BatchTerminationReport = {
      backends: set.backends.map((backend) => ({ backend, total: emptyTally() })),
      namespaces: [],
      total: emptyTally(),
      failures: [],
      notes: [],
      callbackErrors: [],
      ok: true,
    };
    if (set.size === 0) return report;
    const veto = this.config.predicate;
    const query = set.query(veto && ((s) => isInetSocket(s) && veto(s)), Boolean(this.config.dryRun));
    const { signal } = options;
    if (signal) query.signal = signal;
    const conntrack = this.config.conntrack !== false && set.backends.some((b) => b.protocol !== "tcp");
    if (conntrack) {
      report.conntrack = emptyTally("deleted");
      report.backends.forEach((b) => {
        if (b.backend.protocol !== "tcp") b.conntrack = emptyTally("deleted");
      });
    }
    const run: Run = {
      set,
      query,
      destroyIn: this.destroyIn(query),
      report,
      conntrack: conntrack
        ? new ConntrackStep(set.backends, Boolean(this.config.dryRun), this.deleteConntrack)
        : undefined,
    };
    try {
      if (signal?.aborted) throw new AbortError(signal);
      this.visitNamespaces(run);
    } catch (err) {
      if (err instanceof AbortError) {
        report.ok = false;
        err.report = report;
      }
      throw err;
    }
    report.ok =
      report.total.failed.length === 0 &&
      (report.conntrack?.failed.length ?? 0) === 0 &&
      report.failures.length === 0 &&
      report.namespaces.every((n) => !n.error && !n.conntrackError);
    return report;
  }

  /**
   * Visit every namespace of the selection. A walk that throws (a namespace named alone that cannot
   * be opened, or a test's source) ends it: what was visited stays in the report and the exception
   * joins `failures`.
   */
  private visitNamespaces(run: Run): void {
    const broken: Error[] = [];
    const findings: WalkFindings = { failures: [], notes: run.report.notes };
    const walk = guarded(
      this.targets(findings, (total) => {
        run.total = total;
      }),
      broken,
    );
    const { destroyIn, report } = run;
    const { open, sendAhead } = destroyIn;
    const visit = (target: Target, opened: Scan | undefined) => this.visit(target, run, opened);
    const step: NamespaceStep<void, Scan> = {
      ...(open && sendAhead
        ? { open: (target: Target) => (report.unsupported ? undefined : open(target)), sendAhead }
        : {}),
      // biome-ignore lint/correctness/useYield: a step that never pauses
      run: function* (target, opened) {
        using ahead = opened;
        if (run.query.signal?.aborted) throw new AbortError(run.query.signal);
        visit(target, ahead);
      },
    };
    try {
      drain(scheduleFor().run(walk, step, { done() {} }));
    } catch (err) {
      if (isFatalNetnsError(err) || err instanceof AbortError) throw err;
      broken.push(asError(err));
    }
    run.report.failures = [...findings.failures, ...broken].map(sourceFailure);
    for (const f of run.report.failures)
      this.log(run.report, "warn", "namespace source error", { netns: f.netns, error: f.error.message });
  }

  /**
   * The run's destroy in one namespace: the library's, checked and planned once per run; a test's
   * destroyer is asked as the library's entry point is, with the namespace in the query.
   */
  private destroyIn(query: DestroyQuery): DestroyIn {
    const destroy = this.destroy;
    if (!destroy) return prepareDestroy(query);
    return { runIn: (target, onOutcome) => destroy({ ...query, onOutcome, netns: target.netns }) };
  }

  private visit(target: Target, run: Run, opened: Scan | undefined): void {
    const { set, report } = run;
    const name = targetLabel(target);
    const result: BatchNamespaceResult = { netns: name, backends: set.backends.map(() => emptyTally()) };
    if (report.unsupported) {
      result.skipped = true;
    } else {
      // Each matched socket's outcome, counted for its backend (the one backend needs no lookup).
      const onOutcome = (s: Socket, outcome: Outcome, failure?: DestroyFailure) => {
        const i = set.size === 1 ? 0 : set.owner(s);
        if (i !== undefined) countOutcome(result.backends[i]!, outcome, failure);
      };
      let aborted: AbortError | undefined;
      let answer: ReturnType<SocketsDestroyer> | undefined;
      try {
        answer = run.destroyIn.runIn(target, onOutcome, opened);
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        if (err instanceof AbortError) {
          if (!err.report) throw err;
          // Stopped part-way: what this namespace did so far is counted, then the stop goes up.
          aborted = err;
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
        const failure = answer.failures?.[0];
        if (failure && !result.error) result.error = failure.error;
        // A destroyer that tells no outcomes: with one backend, its report is that backend's.
        if (set.size === 1 && result.backends[0]!.matched !== r.matched) {
          result.backends[0] = emptyTally();
          addTally(result.backends[0], r);
        }
        addTally(report.total, r);
        result.backends.forEach((t, i) => {
          addTally(report.backends[i]!.total, t);
        });
        const unsupported = r.stops.find(isKernelUnsupported);
        if (unsupported) report.unsupported = unsupported.reason;
      }
      const counts =
        result.report && result.report.matched > 0
          ? loggedCounts(result.report, result.report.dryRun)
          : undefined;
      if (result.error)
        this.log(report, "warn", "namespace failed", { netns: name, error: result.error.message, ...counts });
      else if (counts) this.log(report, "info", "terminated sockets", { netns: name, ...counts });
      if (aborted) {
        report.namespaces.push(result);
        throw aborted;
      }
    }
    if (run.conntrack) this.visitConntrack(name, target, run.conntrack, run, result);
    report.namespaces.push(result);
    const onNamespace = this.config.onNamespace;
    if (onNamespace)
      this.callSafely(report, () => onNamespace(result, report.namespaces.length - 1, run.total));
  }

  private log(
    report: ReportCommon,
    level: "info" | "warn",
    message: string,
    fields: Record<string, unknown>,
  ): void {
    this.callSafely(report, () => this.logger[level](message, fields));
  }

  /** Run a caller's callback: what it throws is reported, and never stops the walk. */
  private callSafely(report: ReportCommon, callback: () => void): void {
    try {
      callback();
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      report.callbackErrors.push(asSockdiagError(err));
    }
  }

  /** The conntrack step in one namespace; it runs even where sockets could not be destroyed. */
  private visitConntrack(
    name: string,
    target: Target,
    conntrack: ConntrackStep,
    run: Run,
    result: BatchNamespaceResult,
  ): void {
    const { report } = run;
    try {
      const step = conntrack.runIn(target);
      result.conntrack = step.tally;
      if (step.error) result.conntrackError = step.error;
      if (step.note) result.conntrackNote = step.note;
      addTally(report.conntrack!, step.tally);
      step.backends.forEach((t, i) => {
        const total = report.backends[i]!.conntrack;
        if (total) addTally(total, t);
      });
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      result.conntrack = emptyTally("deleted");
      result.conntrackError = asSockdiagError(err);
    }
    const counts =
      result.conntrack.matched > 0 ? loggedCounts(result.conntrack, Boolean(this.config.dryRun)) : undefined;
    if (result.conntrackError)
      this.log(report, "warn", "conntrack failed", {
        netns: name,
        error: result.conntrackError.message,
        ...counts,
      });
    else if (counts) this.log(report, "info", "deleted conntrack entries", { netns: name, ...counts });
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
function destroyReportOf(answer: ReturnType<SocketsDestroyer>): DestroyReport {
  const { matched, destroyed, wouldDestroy, gone, failed, skipped, stops, dryRun } = answer;
  return { matched, destroyed, wouldDestroy, gone, failed, skipped, stops, dryRun };
}

/** Options of one terminate() or terminateMany() call. */
export interface TerminateOptions {
  /**
   * Checked before each namespace and each destroy write: once aborted, nothing more is sent and
   * AbortError is thrown with the report so far (the namespace in progress included).
   */
  signal?: AbortSignalLike;
}

/** EOPNOTSUPP for UDP/TCP means the kernel lacks CONFIG_INET_DIAG_DESTROY: no namespace will do better. */
function isKernelUnsupported(stop: DestroyStop): boolean {
  return stop.code === "EOPNOTSUPP";
}

/**
 * One call: destroy every UDP socket connected to `backend` ("10.0.0.5:53", "[fd00::5]:53") in the
 * host and every other namespace, pinned or found through /proc. Options as TerminatorConfig. Throws
 * AddressError for bad input.
 */
export function terminateUDPConnectionsToBackend(
  backend: string,
  options: TerminatorConfig & TerminateOptions = {},
): TerminationReport {
  const target = parseBackend(backend);
  checkOptions(options, { ...CONFIG_KEYS, ...TERMINATE_KEYS }, "options");
  const { signal, ...config } = options;
  return new BackendTerminator({ ...config, protocol: "udp" }).terminate(
    { address: target.address, port: target.port },
    signal ? { signal } : {},
  );
}

/**
 * One source failure as a report keeps it. A caller's own source may still list plain Errors (or
 * failures whose error is no Error): each becomes a NamespaceFailure holding a SockdiagError, so
 * that reporting it can never throw and lose the report.
 */
function sourceFailure(f: NamespaceFailure | Error): NamespaceFailure {
  if (f instanceof Error || typeof f !== "object" || f === null)
    return { netns: "(source)", error: asSockdiagError(f) };
  return f.error instanceof SockdiagError ? f : { ...f, error: asSockdiagError(f.error) };
}
