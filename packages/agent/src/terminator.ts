/**
 * The agent's terminating collaborator: a batch of removed backends in, one pass over the host and
 * every namespace, a summed outcome out. The agent depends on the `Terminator` interface only;
 * `libraryTerminator` is the real one, over sockdiag/promises' BackendTerminator.
 */
import { statSync } from "node:fs";
import type { BatchTerminationReport, ConntrackEntry, InetSocket, TallyCounts } from "sockdiag";
import { BackendTerminator, probe } from "sockdiag/promises";
import { type AgentBackend, backendText, canonicalAddress } from "./backend.js";
import { netnsOwners } from "./netns-owners.js";
import { type DestroyedSocket, type PodSockets, podsOfSockets } from "./socket-pods.js";

/** How a batch report names the host's own namespace. */
const HOST = "(host)";

/** One error of a batch: a namespace that failed, a socket that could not be destroyed, a source error. */
export interface BatchError {
  netns?: string;
  /** The stable code (ERR_SOCKDIAG_*, or the errno name such as EPERM), when there is one. */
  code?: string;
  message: string;
}

/** A namespace where a batch destroyed sockets (in a dry run: found them), and whose they were. */
export interface TouchedNamespace {
  /** As the report names it: "(host)", a pin's name, "pid:N". */
  netns: string;
  /** Where it was found after the batch (its pin, /proc/PID/ns/net); absent when gone already. */
  path?: string;
  /** The pod UIDs of the processes in it (not looked up for the host: every process is in it). */
  pods: string[];
  sockets: number;
}

/** The outcome of one batch. */
export interface BatchOutcome {
  /** matched = destroyed + gone + failed + skipped. */
  sockets: TallyCounts;
  /** matched = deleted + gone + failed + skipped. */
  conntrack: TallyCounts<ConntrackEntry>;
  /** Namespaces visited, the host included; those that failed. */
  namespaces: { visited: number; failed: number };
  errors: BatchError[];
  /** The namespaces where sockets were destroyed, at most MAX_TOUCHED_NAMED of them. */
  touched: TouchedNamespace[];
  /** The pods whose processes held the sockets destroyed (when the terminator looks them up). */
  pods: PodSockets[];
  /**
   * The conntrack entries deleted, counted per original source address (whose flow it was) and
   * backend as text (when the terminator looks them up, as for `pods`).
   */
  flows: Map<string, Map<string, number>>;
  /** Set when the kernel cannot destroy sockets at all (EOPNOTSUPP). */
  unsupported?: string;
}

/** One check of what this node allows, as `sockdiag doctor` reports it. */
export interface NodeCheck {
  ok: boolean;
  detail: string;
}

/** Terminates many backends in one pass per namespace. Must not block the event loop for long. */
export interface Terminator {
  terminate(backends: readonly AgentBackend[]): Promise<BatchOutcome>;
  /** What the kernel and the agent's privileges allow; also gets the terminator ready for the first batch. */
  check?(): Promise<Record<string, NodeCheck>>;
  /** Release what it holds (a worker thread). */
  close?(): Promise<void>;
}

/** How the real terminator is set up (from the command line). */
export interface LibraryTerminatorConfig {
  /**
   * Pin directories, each where it exists when a batch starts (one manifest serves nodes with and
   * without Cilium or Docker); undefined: the library's defaults (DEFAULT_NETNS_DIRS), the same way.
   */
  netnsDirs: readonly string[] | undefined;
  /** Also visit namespaces found through /proc/PID/ns/net. */
  discover: boolean;
  conntrack: boolean;
  /** sockdiag's onePass (default "auto", as sockdiag's). */
  onePass?: "auto" | "on" | "off";
  dryRun: boolean;
  /**
   * Find the pods holding the sockets destroyed (BatchOutcome.pods), and count the conntrack
   * entries deleted by original source (BatchOutcome.flows).
   */
  socketPods?: boolean;
}

export function emptyOutcome(): BatchOutcome {
  return {
    sockets: { matched: 0, destroyed: 0, wouldDestroy: 0, gone: 0, failed: 0, skipped: 0 },
    conntrack: { matched: 0, deleted: 0, wouldDelete: 0, gone: 0, failed: 0, skipped: 0 },
    namespaces: { visited: 0, failed: 0 },
    errors: [],
    touched: [],
    pods: [],
    flows: new Map(),
  };
}

/** How many touched namespaces a batch names (a log line stays a line). */
export const MAX_TOUCHED_NAMED = 50;

/**
 * The real terminator: sockdiag/promises' BackendTerminator#terminateMany, run on the library's
 * worker thread, one pass per batch (one dump per namespace, protocol and family for all its
 * backends). Pin directories are looked at where they exist when the batch starts.
 */
export function libraryTerminator(config: LibraryTerminatorConfig): Terminator {
  return {
    async terminate(backends) {
      if (backends.length === 0) return emptyOutcome();
      const netnsDirs = config.netnsDirs?.filter(isDirectory);
      const approved = config.socketPods && !config.dryRun ? new BatchRecord() : undefined;
      const terminator = new BackendTerminator({
        ...(netnsDirs ? { netnsDirs } : {}),
        discover: config.discover,
        conntrack: config.conntrack,
        dryRun: config.dryRun,
        onePass: config.onePass ?? "auto",
        ...(approved
          ? { predicate: approved.predicate, conntrackPredicate: approved.conntrackPredicate }
          : {}),
      });
      const report = await terminator.terminateMany(backends);
      const outcome = outcomeOf(report);
      if (approved) {
        outcome.flows = approved.flows(report);
        outcome.pods = await podsOfSockets(approved.destroyed(report)).catch((err: Error) => {
          outcome.errors.push({ message: `cannot find the pods of the sockets destroyed: ${err.message}` });
          return [];
        });
      }
      // Naming the pods is for the log: a failure there is one more error, never the batch's.
      outcome.touched = await touchedNamespaces(report, netnsDirs, config.dryRun).catch((err: Error) => {
        outcome.errors.push({ message: `cannot name the pods of the namespaces touched: ${err.message}` });
        return [];
      });
      return outcome;
    },
    async check() {
      // The first call starts the library's worker thread, which the first batch then finds running.
      const p = await probe();
      return {
        destroy: p.destroy,
        netAdmin: p.capabilities.netAdmin,
        sysAdmin: p.capabilities.sysAdmin,
        enterNetns: p.netns.enter,
        udpTables: p.udpTables,
        onePass: p.onePass,
      };
    },
  };
}

/**
 * The namespaces where the batch destroyed sockets (or, in a dry run, would have), with whose they
 * are — looked up at once, while the processes that held them are still there.
 */
async function touchedNamespaces(
  report: BatchTerminationReport,
  netnsDirs: readonly string[] | undefined,
  dryRun: boolean,
): Promise<TouchedNamespace[]> {
  const touched = report.namespaces
    .map((n) => ({ netns: n.netns, sockets: (dryRun ? n.report?.matched : n.report?.destroyed) ?? 0 }))
    .filter((n) => n.sockets > 0)
    .slice(0, MAX_TOUCHED_NAMED);
  const owners = await netnsOwners(
    touched.map((n) => n.netns).filter((netns) => netns !== HOST),
    netnsDirs ? { netnsDirs } : {},
  );
  return touched.map((n) => {
    const found = owners.get(n.netns);
    return {
      netns: n.netns,
      ...(found?.path ? { path: found.path } : {}),
      pods: found?.pods ?? [],
      sockets: n.sockets,
    };
  });
}

/**
 * The sockets and conntrack entries a batch's predicates let through (every one they were asked
 * about: they only record), less those the report lists as failed: the destroyed and deleted
 * ones, and those gone meanwhile (a socket gone is held by no process any more).
 */
class BatchRecord {
  private readonly sockets: DestroyedSocket[] = [];
  private readonly entries: { id: number; src: string; backend: string }[] = [];

  readonly predicate = (socket: InetSocket): boolean => {
    const backend = backendTextOf(socket.dst, socket.dport, socket.protocol === "tcp" ? "tcp" : "udp");
    if (backend !== undefined) this.sockets.push({ inode: socket.inode, backend });
    return true;
  };

  readonly conntrackPredicate = (entry: ConntrackEntry): boolean => {
    const src = canonicalAddress(entry.original.src);
    const backend =
      entry.reply.sport === undefined ? undefined : backendTextOf(entry.reply.src, entry.reply.sport, "udp");
    if (src !== undefined && backend !== undefined) this.entries.push({ id: entry.id, src, backend });
    return true;
  };

  destroyed(report: BatchTerminationReport): DestroyedSocket[] {
    const failed = new Set(
      report.namespaces.flatMap((n) => n.report?.failed ?? []).map((f) => f.socket.inode),
    );
    return failed.size === 0 ? this.sockets : this.sockets.filter((s) => !failed.has(s.inode));
  }

  /** The entries deleted, counted per original source and backend (as text). */
  flows(report: BatchTerminationReport): Map<string, Map<string, number>> {
    const failed = new Set(
      report.namespaces.flatMap((n) => n.conntrack?.failed ?? []).map((f) => f.entry.id),
    );
    const flows = new Map<string, Map<string, number>>();
    for (const e of this.entries) {
      if (failed.has(e.id)) continue;
      const bySrc = flows.get(e.src) ?? new Map<string, number>();
      flows.set(e.src, bySrc);
      bySrc.set(e.backend, (bySrc.get(e.backend) ?? 0) + 1);
    }
    return flows;
  }
}

/** A backend's text (backendText) from an address as a socket or an entry holds it, or undefined for none. */
function backendTextOf(address: string, port: number, protocol: "udp" | "tcp"): string | undefined {
  const canonical = canonicalAddress(address);
  return canonical === undefined ? undefined : backendText({ address: canonical, port, protocol });
}

function outcomeOf(report: BatchTerminationReport): BatchOutcome {
  const outcome = emptyOutcome();
  // Reports list their failures (`failed`); the outcome counts them.
  Object.assign(outcome.sockets, { ...report.total, failed: report.total.failed.length });
  if (report.conntrack)
    Object.assign(outcome.conntrack, { ...report.conntrack, failed: report.conntrack.failed.length });
  outcome.namespaces.visited = report.namespaces.length;
  for (const n of report.namespaces) {
    if (n.error || n.conntrackError) outcome.namespaces.failed++;
    if (n.error) outcome.errors.push({ netns: n.netns, code: n.error.code, message: n.error.message });
    if (n.conntrackError)
      outcome.errors.push({
        netns: n.netns,
        code: n.conntrackError.code,
        message: `conntrack: ${n.conntrackError.message}`,
      });
    for (const f of n.report?.failed ?? [])
      outcome.errors.push({ netns: n.netns, code: f.code, message: f.message });
  }
  for (const f of report.failures)
    outcome.errors.push({ netns: f.netns, code: f.error.code, message: f.error.message });
  if (report.unsupported) outcome.unsupported = report.unsupported;
  return outcome;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
