/**
 * BackendTerminator: when a load-balancer backend goes away, destroy every socket still connected
 * to it — in the host namespace and in every pod/container namespace — so that each owner's next
 * read fails with ECONNABORTED and it reconnects to a live backend. The behaviour follows Cilium's
 * TerminateUDPConnectionsToBackend, without its failure modes: every error is returned in the
 * report (never only logged), one namespace's failure never stops the others, and a kernel that
 * cannot destroy sockets is recognised once.
 */
import type { InetFamily, InetProtocol, InetSocket, Socket } from "../diag/socket.js";
import { DEFAULT_STATES } from "../diag/states.js";
import { allNetns, current, isFatalNetnsError, isVanishedNetns, type NetNS } from "../netns/index.js";
import {
  type DestroyQuery,
  type DestroyReport,
  type DestroyStop,
  destroySockets,
  type NamespacedDestroyReport,
  type NetnsSelector,
  PredicateError,
  QueryError,
} from "../sockets/index.js";
import {
  type Backend,
  type BackendProtocol,
  checkBackend,
  type ParsedBackend,
  parseBackend,
} from "./backend.js";

/** One namespace a terminator visits. */
export interface NamespaceEntry {
  name: string;
  netns: NetNS;
}

/** A source of namespaces: iterable, with the errors met while iterating (like allNetns()). */
export interface NamespaceSource extends Iterable<NamespaceEntry> {
  readonly errors: readonly Error[];
}

/** Destroys the sockets of a query: the sockets library by default; tests inject faults here. */
export type SocketsDestroyer = (query: DestroyQuery) => DestroyReport;

/** Where log lines go. Without one, BackendTerminator logs nothing (everything is in its report). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** BackendTerminator's configuration and collaborators; every field is optional. */
export interface TerminatorConfig {
  /** Namespaces to visit after the host's. Default: allNetns over `netnsDirs`. */
  namespaces?: () => NamespaceSource;
  /** Pin directories for the default namespace source. Default ["/run/netns"]. */
  netnsDirs?: readonly string[];
  /** Visit only the host namespace. */
  hostOnly?: boolean;
  /** Protocol when terminate() is not told one. Default "udp". */
  protocol?: BackendProtocol;
  /** Veto per socket: return false to keep it (Cilium checks its socket-LB map by cookie here). */
  predicate?: (socket: InetSocket) => boolean;
  /** Count and report, destroy nothing. */
  dryRun?: boolean;
  logger?: Logger;
  /** Called after each namespace, e.g. for a progress line. */
  onNamespace?: (result: NamespaceResult, index: number) => void;
  /** The destroying collaborator. Default: destroySockets from the sockets library. */
  destroy?: SocketsDestroyer;
}

/** What happened in one namespace. */
export interface NamespaceResult {
  /** The namespace's name; "(host)" for the caller's own. */
  netns: string;
  /** Undefined when the namespace could not be visited (see `error`) or was skipped. */
  report?: DestroyReport;
  /** Why the namespace could not be visited or listed. */
  error?: { name: string; message: string };
  /** Not attempted: an earlier answer showed the kernel cannot destroy sockets. */
  skipped?: boolean;
}

/** The outcome of terminate(). */
export interface TerminationReport {
  backend: { address: string; port: number; protocol: BackendProtocol };
  namespaces: NamespaceResult[];
  total: { matched: number; destroyed: number; gone: number; failed: number; skipped: number };
  /** Namespace-source errors: unreadable directory, an entry that is not a namespace, ... */
  sourceErrors: { name: string; message: string }[];
  /**
   * What the logger or onNamespace threw. A callback's exception never ends the walk nor fails a
   * namespace; it is kept here (and does not change `ok`).
   */
  callbackErrors: { name: string; message: string }[];
  /** Set when the kernel answered EOPNOTSUPP: it cannot destroy these sockets, and no more attempts were made. */
  unsupported?: string;
  /**
   * True when everything matched was destroyed or already gone and no namespace failed. A namespace
   * removed between being listed and being opened (NetnsNotFoundError in `sourceErrors`) had no
   * socket left to destroy: it is reported, and it is not a failure.
   */
  ok: boolean;
}

const noLogger: Logger = { info() {}, warn() {} };

/**
 * BackendTerminator destroys the sockets connected to a backend that went away, in the host and in
 * every namespace of its source; built once with its configuration, used for every backend.
 */
export class BackendTerminator {
  private readonly config: TerminatorConfig;
  private readonly destroy: SocketsDestroyer;
  private readonly logger: Logger;

  constructor(config: TerminatorConfig = {}) {
    this.config = config;
    this.destroy = config.destroy ?? destroySockets;
    this.logger = config.logger ?? noLogger;
  }

  /**
   * Destroy every connected socket whose destination is exactly the backend's address and port:
   * host first, then every namespace of the source (unless hostOnly). An IPv4 backend also matches
   * IPv6 sockets connected to its v4-mapped address. Unconnected sockets are never touched.
   * Throws AddressError for a bad address or port, before touching anything; NetnsRestoreError or
   * NetnsPoisonedError when the thread could not return to its own namespace. Every other failure
   * is in the report.
   */
  terminate(backend: Backend): TerminationReport {
    const target = checkBackend(backend.address, backend.port);
    const protocol = backend.protocol ?? this.config.protocol ?? "udp";
    if (!["udp", "tcp", "any"].includes(protocol))
      throw new QueryError("protocol", String(protocol), "expected udp, tcp or any");
    const report: TerminationReport = {
      backend: { address: target.address, port: target.port, protocol },
      namespaces: [],
      total: { matched: 0, destroyed: 0, gone: 0, failed: 0, skipped: 0 },
      sourceErrors: [],
      callbackErrors: [],
      ok: true,
    };
    const query = this.queryFor(target, protocol);
    this.visit("(host)", undefined, query, report);
    const vanished: Error[] = [];
    if (!this.config.hostOnly) this.visitNamespaces(query, report, vanished);
    report.ok =
      report.total.failed === 0 &&
      report.sourceErrors.length === vanished.length &&
      report.namespaces.every((n) => !n.error);
    return report;
  }

  /**
   * Visit every namespace of the source. A source that throws (while made or while iterated) ends
   * the walk: what was visited stays in the report and the exception joins `sourceErrors`.
   */
  private visitNamespaces(query: DestroyQuery, report: TerminationReport, vanished: Error[]): void {
    const broken: Error[] = [];
    let source: NamespaceSource | undefined;
    try {
      source = this.config.namespaces?.() ?? defaultSource(this.config.netnsDirs);
      using host = current();
      for (const { name, netns } of guarded(source, broken)) {
        // The host namespace may be pinned too (e.g. `ip netns attach host 1`): visit it once.
        if (netns.equals(host)) continue;
        this.visit(name, netns, query, report);
      }
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      broken.push(asError(err));
    }
    const errors = [...(source?.errors ?? []), ...broken];
    report.sourceErrors = errors.map((e) => ({ name: e.name, message: e.message }));
    vanished.push(...errors.filter(isVanishedNetns));
    for (const e of report.sourceErrors)
      this.log(report, "warn", "namespace source error", { error: e.message });
  }

  private visit(
    name: string,
    netns: NetnsSelector | undefined,
    query: DestroyQuery,
    report: TerminationReport,
  ): void {
    const result: NamespaceResult = { netns: name };
    if (report.unsupported) {
      result.skipped = true;
    } else {
      let outcome: NamespacedDestroyReport | undefined;
      try {
        outcome = this.destroy(netns === undefined ? query : { ...query, netns }) as NamespacedDestroyReport;
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        // A predicate that threw still leaves the counts of what was destroyed before it.
        if (err instanceof PredicateError) outcome = err.report;
        const e = asError(err);
        result.error = { name: e.name, message: e.message };
      }
      if (outcome) {
        const { namespaceFailures, ...r } = outcome;
        result.report = r;
        // A failure after destroying began comes back with the partial report instead of thrown.
        const failure = namespaceFailures?.[0];
        if (failure && !result.error)
          result.error = { name: failure.error.name, message: failure.error.message };
        addTotals(report.total, r);
        const unsupported = r.stops.find(isKernelUnsupported);
        if (unsupported) report.unsupported = unsupported.reason;
      }
      if (result.error)
        this.log(report, "warn", "namespace failed", { netns: name, error: result.error.message });
      else if (result.report && result.report.matched > 0)
        this.log(report, "info", "terminated sockets", {
          netns: name,
          destroyed: result.report.destroyed,
          failed: result.report.failed.length,
        });
    }
    report.namespaces.push(result);
    const onNamespace = this.config.onNamespace;
    if (onNamespace) this.callSafely(report, () => onNamespace(result, report.namespaces.length - 1));
  }

  private log(
    report: TerminationReport,
    level: "info" | "warn",
    message: string,
    fields: Record<string, unknown>,
  ): void {
    this.callSafely(report, () => this.logger[level](message, fields));
  }

  /** Run a caller's callback: what it throws is reported, and never stops the walk. */
  private callSafely(report: TerminationReport, callback: () => void): void {
    try {
      callback();
    } catch (err) {
      if (isFatalNetnsError(err)) throw err;
      const e = asError(err);
      report.callbackErrors.push({ name: e.name, message: e.message });
    }
  }

  private queryFor(target: ParsedBackend, protocol: BackendProtocol): DestroyQuery {
    const protocols: InetProtocol[] = protocol === "any" ? ["udp", "tcp"] : [protocol];
    // An IPv4 backend is reached from IPv6 sockets too, through its v4-mapped address.
    const families: InetFamily[] = target.family === "inet" ? ["inet", "inet6"] : ["inet6"];
    const veto = this.config.predicate;
    return {
      protocols,
      families,
      // Connected sockets only (ss's default states: for UDP, established; for TCP also syn-sent,
      // fin-wait, close-wait, ...): unconnected and listening sockets are never touched.
      states: DEFAULT_STATES,
      // Exactly ip:port; the filter's AF_INET address also matches ::ffff:a.b.c.d (ss semantics).
      filter: { dst: target.address, dport: target.port },
      ...(veto ? { predicate: (s: Socket) => s.family !== "unix" && veto(s) } : {}),
      dryRun: Boolean(this.config.dryRun),
    };
  }
}

function addTotals(total: TerminationReport["total"], r: DestroyReport): void {
  total.matched += r.matched;
  total.destroyed += r.destroyed;
  total.gone += r.gone;
  total.failed += r.failed.length;
  total.skipped += r.skipped;
}

/** EOPNOTSUPP for UDP/TCP means the kernel lacks CONFIG_INET_DIAG_DESTROY: no namespace will do better. */
function isKernelUnsupported(stop: DestroyStop): boolean {
  return stop.code === "EOPNOTSUPP";
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The entries of `source`; an exception its iterator throws ends the walk and goes to `broken`. */
function* guarded(source: NamespaceSource, broken: Error[]): Generator<NamespaceEntry> {
  const entries = source[Symbol.iterator]();
  try {
    for (;;) {
      let next: IteratorResult<NamespaceEntry>;
      try {
        next = entries.next();
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        broken.push(asError(err));
        return;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    entries.return?.();
  }
}

function defaultSource(dirs: readonly string[] | undefined): NamespaceSource {
  const iteration = allNetns(dirs ? { dirs } : {});
  return {
    errors: iteration.errors,
    *[Symbol.iterator]() {
      for (const { name, netns } of iteration) yield { name, netns };
    },
  };
}

/**
 * One call: destroy every UDP socket connected to `backend` ("10.0.0.5:53", "[fd00::5]:53") in the
 * host and every pinned namespace. Options as TerminatorConfig. Throws AddressError for bad input.
 */
export function terminateUDPConnectionsToBackend(
  backend: string,
  options: TerminatorConfig = {},
): TerminationReport {
  const target = parseBackend(backend);
  return new BackendTerminator({ ...options, protocol: "udp" }).terminate({
    address: target.address,
    port: target.port,
  });
}
