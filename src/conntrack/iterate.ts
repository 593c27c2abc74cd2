/** iterateConntrack / listConntrack: the read half of the conntrack library. */
import type { ConntrackEntry } from "../ctnl/index.js";
import type { ConntrackNote } from "../report.js";
import { type NamespaceFailure, recordOrThrow, targetsOf } from "../sockets/query.js";
import { type ConntrackPlan, type ConntrackQuery, planConntrack } from "./query.js";
import { ConntrackScan, ConntrackUnavailableError } from "./scan.js";

/**
 * ConntrackIteration is the stream of entries of a query. With `netns: "all"`, a namespace that
 * cannot be entered or listed goes to `failures` and the others go on; one without conntrack goes
 * to `notes`, in every case.
 */
export class ConntrackIteration implements Iterable<ConntrackEntry> {
  readonly failures: NamespaceFailure[] = [];
  readonly notes: ConntrackNote[] = [];
  private readonly plan: ConntrackPlan;

  /** Checks the query at once (ConntrackQueryError): nothing is sent before that. */
  constructor(private readonly query: ConntrackQuery) {
    this.plan = planConntrack(query);
  }

  *[Symbol.iterator](): Generator<ConntrackEntry> {
    this.failures.length = 0;
    this.notes.length = 0;
    if (this.plan.nothing) return;
    for (const target of targetsOf(this.query.netns, this.query, this.failures)) {
      try {
        using scan = new ConntrackScan(target, this.plan);
        yield* scan.entries();
      } catch (err) {
        if (err instanceof ConntrackUnavailableError) this.notes.push(noteOf(target.label, err));
        else recordOrThrow(this.query.netns, target, err, this.failures);
      }
    }
  }

  /** Every entry in an array. */
  toArray(): ConntrackEntry[] {
    this.failures.length = 0;
    this.notes.length = 0;
    const out: ConntrackEntry[] = [];
    if (this.plan.nothing) return out;
    for (const target of targetsOf(this.query.netns, this.query, this.failures)) {
      try {
        using scan = new ConntrackScan(target, this.plan);
        scan.each((e) => {
          out.push(e);
        });
      } catch (err) {
        if (err instanceof ConntrackUnavailableError) this.notes.push(noteOf(target.label, err));
        else recordOrThrow(this.query.netns, target, err, this.failures);
      }
    }
    return out;
  }
}

/** The note for a namespace without conntrack. */
export function noteOf(label: string | undefined, error: ConntrackUnavailableError): ConntrackNote {
  return { netns: label ?? "(host)", error, note: "no-conntrack" };
}

/**
 * Stream the conntrack entries matching `query`, namespace after namespace, with flat memory.
 * Throws ConntrackQueryError before sending anything for a bad query; for a single namespace,
 * NetnsError when it cannot be opened and NetlinkError / SysError for kernel failures.
 */
export function iterateConntrack(query: ConntrackQuery = {}): ConntrackIteration {
  return new ConntrackIteration(query);
}

/** The entries matching `query`, in an array. Same errors as iterateConntrack. */
export function listConntrack(query: ConntrackQuery = {}): ConntrackEntry[] {
  return iterateConntrack(query).toArray();
}
