/**
 * BackendTerminator: when a load-balancer backend goes away, destroy every socket still connected
 * to it — in the host namespace and in every pod/container namespace — so that each owner's next
 * read fails with ECONNABORTED and it reconnects to a live backend. The behaviour follows Cilium's
 * TerminateUDPConnectionsToBackend, without its failure modes: every error is returned in the
 * report (never only logged), one namespace's failure never stops the others, and a kernel that
 * cannot destroy sockets is recognised once. For UDP backends it also deletes the conntrack entries
 * DNATed to them (conntrack-step.ts says why).
 */

import { isInetSocket } from "../diag/socket.js";
import {
  checkNamespaceSelection,
  isFatalNetnsError,
  KeptTargets,
  type NamespaceFailure,
  type NamespaceNote,
  type NamespaceSelection,
  type NetlinkOpener,
  type NetnsRef,
  type Target,
  targetsOf,
  type WalkFindings,
} from "../netns/index.js";
import { checkOptions } from "../options/index.js";
import { AbortError, emptyTally } from "../run/index.js";
import { drain, type NamespaceStep, ruledOutFirst, scheduleFor } from "../schedule/index.js";
import { emptyReport, type PreparedDestroy, prepareDestroy, type Scan } from "../sockets/index.js";
import { asSockdiagError, SockdiagError } from "../sys/errors.js";
import { type Backend, parseBackend } from "./backend.js";
import { BackendSet } from "./backend-set.js";
import {
  CONFIG_KEYS,
  checkTerminatorConfig,
  type Logger,
  TERMINATE_KEYS,
  type TerminateOptions,
  type TerminatorConfig,
} from "./config.js";
import { ConntrackStep } from "./conntrack-step.js";
import {
  countersOf,
  decideOnePass,
  type FindSockets,
  type NamespacePlan,
  type NamespaceVerdict,
  type OnePassDecision,
  type OnePassSummary,
} from "./one-pass.js";
import {
  addNamespace,
  type BatchNamespaceResult,
  type BatchTerminationReport,
  emptyBatchReport,
  type ReportCommon,
  reportOk,
  singleReport,
  type TerminationReport,
} from "./report.js";
import { asError, guarded } from "./sources.js";
import { NamespaceTermination } from "./step.js";

/**
 * The lowest seams a test puts under the terminator (BackendTerminator's second argument): a source
 * of targets standing in for namespaces, and the netlink connections opened there. The
 * terminator's own logic is the same with or without them. Not configuration, and not part of
 * sockdiag's public surface.
 */
export interface TerminatorSeam {
  /** The namespaces to visit, in order, telling `findings` what the walk met. Default: targetsOf. */
  targets?: (findings: WalkFindings) => Iterable<Target>;
  /**
   * Opens each namespace's netlink connections (sock_diag, netfilter) in place of entering it: a
   * fake kernel standing in for the namespaces `targets` gives. Default: real sockets inside.
   */
  open?: NetlinkOpener;
  /**
   * The one pass (default findConnectedSockets): a test's stand-in runs it on the real kernel
   * with something around it — a program the verifier refuses, a socket closed after the pass.
   * Unlike the other seams it leaves the one pass in use.
   */
  find?: FindSockets;
  /**
   * The one pass's verdicts, given by a plan made elsewhere (GivenVerdicts: the share of a pool's
   * worker, from sharedPlan): no pass is run, and the namespaces are judged by them.
   */
  plan?: NamespacePlan;
}

/**
 * A termination's namespaces judged once for a pool of workers (BackendTerminator#sharedPlan):
 * the walk's refs and what it met, the one pass's summary (absent with onePass "off"), and, when
 * the pass was used, each ref's part — the namespace ruled out (its note), or its verdict for the
 * worker that visits it (undefined: it could not be opened again; the worker will say why).
 */
export interface SharedPlan extends WalkFindings {
  refs: (NetnsRef | undefined)[];
  summary?: OnePassSummary;
  parts?: ({ ruledOut: NamespaceNote<string> } | { verdict: NamespaceVerdict } | undefined)[];
}

const noLogger: Logger = { info() {}, warn() {} };

/**
 * BackendTerminator destroys the sockets connected to backends that went away, in the host and in
 * every namespace of its source; built once with its configuration, used for every backend. What
 * it does in each namespace is step.ts's NamespaceTermination; which namespaces, in what order and
 * on which threads, schedule/'s; here the run is set up and the namespaces' results added up.
 */
export class BackendTerminator {
  private readonly config: TerminatorConfig;
  private readonly logger: Logger;
  private readonly open: NetlinkOpener | undefined;
  private readonly find: FindSockets | undefined;
  private readonly given: NamespacePlan | undefined;
  /** A test's collaborators are in place: the one pass, which bypasses them, is not taken. */
  private readonly seamed: boolean;
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
    this.open = seam.open;
    this.find = seam.find;
    this.given = seam.plan;
    this.seamed = seam.targets !== undefined || seam.open !== undefined;
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
    const dryRun = Boolean(this.config.dryRun);
    const conntrack = set.conntrackWanted(this.config.conntrack);
    const report = emptyBatchReport(set.backends, conntrack);
    if (set.size === 0) return report;
    const veto = this.config.predicate;
    const query = set.query(veto && ((s) => isInetSocket(s) && veto(s)), dryRun);
    const { signal } = options;
    if (signal) query.signal = signal;
    const destroy = prepareDestroy(query, this.open);
    const decided = this.given ? undefined : this.decide(set, conntrack, () => new KeptTargets(this.targets));
    // The namespaces listed for the counters are the run's walk, held open until it is over.
    using kept = decided?.kept;
    const decision = decided?.decision;
    // The plan holds the namespaces' counters open until the run is over.
    using _counters = decision?.plan;
    const onePass: { summary?: OnePassSummary; plan?: NamespacePlan | undefined } = decision ?? {
      plan: this.given,
    };
    if (onePass.summary && onePass.summary.mode !== "off") {
      report.onePass = onePass.summary;
      const { used, reason, message } = onePass.summary;
      if (!used) report.notes.push({ netns: "(one pass)", skipped: reason!, message });
      this.log(report, "info", used ? "one pass" : "one pass not taken", { ...onePass.summary });
    }
    const step = new NamespaceTermination(
      set,
      destroy,
      conntrack
        ? new ConntrackStep(set.backends, dryRun, this.config.conntrackPredicate, this.open)
        : undefined,
      dryRun,
      (level, message, fields) => this.log(report, level, message, fields),
    );
    try {
      if (signal?.aborted) throw new AbortError(signal);
      this.visitNamespaces(report, destroy, step, query.signal, onePass.plan, kept);
    } catch (err) {
      if (err instanceof AbortError) {
        report.ok = false;
        err.report = report;
      }
      throw err;
    }
    report.ok = reportOk(report);
    return report;
  }

  /**
   * Whether the run takes the one pass (decideOnePass), the counters before it read over the
   * namespaces `list` gives, kept for the run to walk (disposed here if deciding throws).
   */
  private decide(
    set: BackendSet,
    conntrack: boolean,
    list: () => KeptTargets,
  ): { decision: OnePassDecision; kept?: KeptTargets } {
    let kept = undefined as KeptTargets | undefined;
    try {
      const decision = decideOnePass(
        {
          mode: this.config.onePass ?? "auto",
          backends: set.backends,
          all: (this.config.netns ?? "all") === "all",
          seam: this.seamed,
          conntrack,
        },
        () => {
          kept = list();
          return countersOf(kept.targets, conntrack);
        },
        this.find,
      );
      return kept ? { decision, kept } : { decision };
    } catch (err) {
      kept?.[Symbol.dispose]();
      throw err;
    }
  }

  /**
   * The namespaces of a termination over every namespace, listed and judged once by the one pass
   * for a pool of workers to share (sockdiag/promises): see SharedPlan. Throws as terminateMany
   * does before visiting anything (OnePassUnavailableError with "on" where the pass cannot run).
   */
  sharedPlan(backends: readonly Backend[]): SharedPlan {
    checkNamespaceSelection(this.config);
    const set = new BackendSet(backends, this.config.protocol ?? "udp");
    const conntrack = set.conntrackWanted(this.config.conntrack);
    const findings: WalkFindings = { failures: [], notes: [] };
    const selection: NamespaceSelection = { ...this.config, netns: "all" };
    using kept = new KeptTargets((found, onFound) => targetsOf(selection, found, onFound));
    const refs = Array.from(kept.replay(findings), (target) => target.ref && { ...target.ref });
    const { decision } = this.decide(set, conntrack, () => kept);
    const shared: SharedPlan = { refs, ...findings };
    if (decision.summary.mode !== "off") shared.summary = decision.summary;
    using plan = decision.plan;
    if (!plan) return shared;
    shared.parts = kept.targets.map((target) => {
      const note = plan.ruledOut(target);
      return note ? { ruledOut: note } : { verdict: plan.verdict(target) };
    });
    return shared;
  }

  /**
   * Run `step` in every namespace of the selection, as schedule/ schedules them, adding each
   * namespace's result to the report. A walk that throws (a namespace named alone that cannot be
   * opened, or a test's source) ends it: what was visited stays in the report and the exception
   * joins `failures`.
   */
  private visitNamespaces(
    report: BatchTerminationReport,
    destroy: PreparedDestroy,
    step: NamespaceTermination,
    signal: TerminateOptions["signal"],
    plan: NamespacePlan | undefined,
    kept: KeptTargets | undefined,
  ): void {
    const broken: Error[] = [];
    const findings: WalkFindings = { failures: [], notes: report.notes };
    let found: number | undefined;
    const onFound = (total: number) => {
      found = total;
    };
    const walk = guarded(kept ? kept.replay(findings, onFound) : this.targets(findings, onFound), broken);
    const { open, sendAhead } = destroy;
    // A namespace the pass decided is not walked: nothing of it is opened ahead.
    const walked = (target: Target) => !plan || plan.verdict(target).sockets === "walk";
    const inNamespace: NamespaceStep<void, Scan> = {
      open: (target: Target) => (report.unsupported || !walked(target) ? undefined : open(target)),
      sendAhead,
      // biome-ignore lint/correctness/useYield: a step that never pauses
      run: function* (target, opened) {
        const { result, conntrack, unsupported, stopped } = step.runIn(
          target,
          opened,
          report.unsupported !== undefined,
          signal,
          plan?.verdict(target),
        );
        if (result) addNamespace(report, result, conntrack);
        if (unsupported) report.unsupported ??= unsupported;
        if (stopped) throw stopped;
        if (result) onNamespace(result);
      },
    };
    const onNamespace = (result: BatchTerminationReport["namespaces"][number]) => {
      const callback = this.config.onNamespace;
      if (callback) this.callSafely(report, () => callback(result, report.namespaces.length - 1, found));
    };
    const ruledOut = (note: NamespaceNote<string>) => {
      const result = ruledOutResult(note, report.backends.length, Boolean(this.config.dryRun));
      addNamespace(report, result, undefined);
      onNamespace(result);
    };
    const schedule = plan ? ruledOutFirst(scheduleFor(), (t) => plan.ruledOut(t)) : scheduleFor();
    try {
      drain(schedule.run(walk, inNamespace, { done() {}, ruledOut }));
    } catch (err) {
      if (isFatalNetnsError(err) || err instanceof AbortError) throw err;
      broken.push(asError(err));
    }
    report.failures = [...findings.failures, ...broken].map(sourceFailure);
    for (const f of report.failures)
      this.log(report, "warn", "namespace source error", { netns: f.netns, error: f.error.message });
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

/** The result of a namespace the one pass ruled out: not entered, nothing counted, how in `onePass`. */
export function ruledOutResult(
  note: NamespaceNote<string>,
  backends: number,
  dryRun: boolean,
): BatchNamespaceResult {
  return {
    netns: note.netns,
    backends: Array.from({ length: backends }, () => emptyTally()),
    report: emptyReport(dryRun),
    onePass: note.message,
    ruledOut: true,
  };
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
