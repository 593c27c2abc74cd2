/**
 * The agent's terminating collaborator: a batch of removed backends in, one pass over the host and
 * every namespace, a summed outcome out. The agent depends on the `Terminator` interface only;
 * `libraryTerminator` is the real one, over sockdiag's BackendTerminator.
 */
import { existsSync } from "node:fs";
import {
  allNetns,
  BackendTerminator,
  discoverNetns,
  type NamespaceSource,
  type TerminationReport,
} from "sockdiag";
import type { AgentBackend, AgentProtocol } from "./backend.js";
import { DEFAULT_NETNS_DIRS } from "./options.js";

/** Socket counts: matched = destroyed + gone + failed + skipped. */
export interface SocketCounts {
  matched: number;
  destroyed: number;
  gone: number;
  failed: number;
  skipped: number;
}

/** Conntrack counts: matched = deleted + gone + failed. */
export interface ConntrackCounts {
  matched: number;
  deleted: number;
  gone: number;
  failed: number;
}

/** One error of a batch: a namespace that failed, a socket that could not be destroyed, a source error. */
export interface BatchError {
  netns?: string;
  message: string;
}

/** The outcome of one batch. */
export interface BatchOutcome {
  sockets: SocketCounts;
  conntrack: ConntrackCounts;
  /** Namespaces visited, the host included; those that failed. */
  namespaces: { visited: number; failed: number };
  errors: BatchError[];
  /** Set when the kernel cannot destroy sockets at all (EOPNOTSUPP). */
  unsupported?: string;
}

/** Terminates many backends in one pass per namespace. Must not block the event loop for long. */
export interface Terminator {
  terminate(backends: readonly AgentBackend[]): Promise<BatchOutcome>;
  /** Release what it holds (a worker thread). */
  close?(): Promise<void>;
}

/** How the real terminator is set up (from the command line). */
export interface LibraryTerminatorConfig {
  /** Pin directories; undefined: DEFAULT_NETNS_DIRS, each where it exists at the time of a batch. */
  netnsDirs: readonly string[] | undefined;
  /** Also visit namespaces found through /proc/PID/ns/net. */
  discover: boolean;
  conntrack: boolean;
  dryRun: boolean;
}

export function emptyOutcome(): BatchOutcome {
  return {
    sockets: { matched: 0, destroyed: 0, gone: 0, failed: 0, skipped: 0 },
    conntrack: { matched: 0, deleted: 0, gone: 0, failed: 0 },
    namespaces: { visited: 0, failed: 0 },
    errors: [],
  };
}

/** The real terminator, over sockdiag's BackendTerminator. */
export function libraryTerminator(config: LibraryTerminatorConfig): Terminator {
  const terminators = new Map<AgentProtocol, BackendTerminator>();
  const forProtocol = (protocol: AgentProtocol): BackendTerminator => {
    let t = terminators.get(protocol);
    if (!t) {
      t = new BackendTerminator({
        protocol,
        dryRun: config.dryRun,
        namespaces: () => namespaceSource(config),
      });
      terminators.set(protocol, t);
    }
    return t;
  };
  return {
    async terminate(backends) {
      const outcome = emptyOutcome();
      for (const b of backends) {
        const report = forProtocol(b.protocol).terminate({ address: b.address, port: b.port });
        addReport(outcome, report);
      }
      return outcome;
    },
  };
}

function addReport(outcome: BatchOutcome, report: TerminationReport): void {
  const s = outcome.sockets;
  s.matched += report.total.matched;
  s.destroyed += report.total.destroyed;
  s.gone += report.total.gone;
  s.failed += report.total.failed;
  s.skipped += report.total.skipped;
  outcome.namespaces.visited += report.namespaces.length;
  for (const n of report.namespaces) {
    if (n.error) {
      outcome.namespaces.failed++;
      outcome.errors.push({ netns: n.netns, message: n.error.message });
    }
    for (const f of n.report?.failed ?? []) outcome.errors.push({ netns: n.netns, message: f.message });
  }
  for (const e of report.sourceErrors) outcome.errors.push({ message: e.message });
  if (report.unsupported) outcome.unsupported = report.unsupported;
}

function namespaceSource(config: LibraryTerminatorConfig): NamespaceSource {
  const dirs = config.netnsDirs ?? DEFAULT_NETNS_DIRS.filter((d) => existsSync(d));
  if (!config.discover) {
    const pinned = allNetns({ dirs });
    return {
      errors: pinned.errors,
      *[Symbol.iterator]() {
        for (const { name, netns } of pinned) yield { name, netns };
      },
    };
  }
  const found = discoverNetns({ dirs });
  return {
    errors: found.errors,
    *[Symbol.iterator]() {
      for (const { name, pids, netns } of found) yield { name: name ?? `pid ${pids[0]}`, netns };
    },
  };
}
