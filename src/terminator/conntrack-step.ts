/**
 * The conntrack half of a backend termination. A client that reached a backend through DNAT (a
 * virtual IP: kube-proxy, Calico, any load balancer) holds a socket connected to the virtual IP, not
 * to the backend: destroying sockets cannot reach it, and its conntrack entry keeps sending every
 * datagram to the dead backend for as long as the client keeps sending. Deleting the UDP entries
 * whose reply source is the backend (the address the flow was rewritten to) sends the client's next
 * datagram through NAT again, to a live backend. TCP needs none of this: a dead backend resets.
 */
import {
  type ConntrackEntry,
  type ConntrackSelection,
  type DeleteConntrackQuery,
  type PreparedConntrackDelete,
  prepareConntrackDelete,
} from "../conntrack/index.js";
import type { NamespaceNote, NetlinkOpener, Target } from "../netns/index.js";
import { type ConntrackFailure, countOutcome, emptyTally, type Outcome, type Tally } from "../run/index.js";
import type { SockdiagError } from "../sys/errors.js";
import type { BackendName } from "./report.js";

/** What the conntrack step did in one namespace. */
export interface ConntrackStepResult {
  tally: Tally<ConntrackEntry>;
  /** Per backend, index-aligned with the run's backends; they sum to `tally`. */
  backends: Tally<ConntrackEntry>[];
  /** The namespace failed (cannot be entered, the kernel refused the dump). */
  error?: SockdiagError;
  /** The namespace was passed over (no conntrack there): nothing to delete, not a failure. */
  note?: NamespaceNote<string>;
}

/**
 * The selections of the UDP entries DNATed to `backends` (those whose protocol covers UDP): reply
 * source = backend address and port. An IPv4 backend matches IPv4 entries; conntrack tracks a
 * v4-mapped socket's traffic as IPv4, so an IPv6 entry matches only where it really carries the
 * address, as ::ffff:a.b.c.d.
 */
export function conntrackSelections(backends: readonly BackendName[]): ConntrackSelection[] {
  const out: ConntrackSelection[] = [];
  for (const b of backends) {
    if (b.protocol === "tcp") continue;
    const v4 = !b.address.includes(":");
    out.push({ family: v4 ? "inet" : "inet6", reply: { src: b.address, sport: b.port } });
    if (v4) out.push({ family: "inet6", reply: { src: `::ffff:${b.address}`, sport: b.port } });
  }
  return out;
}

/**
 * The conntrack step of one run: the UDP conntrack entries of every backend deleted in one
 * namespace at a time, with one dump, each entry counted for the backend it was DNATed to. The
 * query is checked and planned once, when the step is made.
 */
export class ConntrackStep {
  private readonly index = new Map<string, number>();
  private readonly deletes: PreparedConntrackDelete;

  constructor(
    private readonly backends: readonly BackendName[],
    dryRun: boolean,
    predicate: ((entry: ConntrackEntry) => boolean) | undefined,
    open: NetlinkOpener | undefined,
  ) {
    backends.forEach((b, i) => {
      if (b.protocol === "tcp") return;
      const key = `${b.address} ${b.port}`;
      if (!this.index.has(key)) this.index.set(key, i);
      if (!b.address.includes(":") && !this.index.has(`::ffff:${key}`)) this.index.set(`::ffff:${key}`, i);
    });
    const query: DeleteConntrackQuery = {
      protocol: "udp",
      anyOf: conntrackSelections(backends),
      dryRun,
      ...(predicate ? { predicate } : {}),
    };
    this.deletes = prepareConntrackDelete(query, open);
  }

  /** The step in one namespace; `entries`: its entry count when the one pass's plan read it. */
  runIn(target: Target, entries?: number): ConntrackStepResult {
    const result: ConntrackStepResult = {
      tally: emptyTally("deleted"),
      backends: this.backends.map(() => emptyTally("deleted")),
    };
    const onOutcome = (
      entry: ConntrackEntry,
      outcome: Outcome<ConntrackEntry>,
      failure?: ConntrackFailure,
    ) => {
      const i = this.index.get(`${entry.reply.src} ${entry.reply.sport}`);
      if (i !== undefined) countOutcome(result.backends[i]!, outcome, failure);
    };
    const report = this.deletes.runIn(target, onOutcome, entries);
    result.tally = {
      matched: report.matched,
      deleted: report.deleted,
      wouldDelete: report.wouldDelete,
      gone: report.gone,
      failed: [...report.failed],
      skipped: report.skipped,
    };
    const failure = report.failures[0];
    if (failure) result.error = failure.error;
    const note = report.notes[0];
    if (note) result.note = note;
    return result;
  }
}
