/** iterateConntrack / listConntrack: the read half of the conntrack library. */
import type { ConntrackEntry } from "../ctnl/index.js";
import { checkNamespaceSelection, type NamespaceFailure, type Target, targetsOf } from "../netns/index.js";
import { checkOptions } from "../options/index.js";
import { recordOrThrow } from "../run/index.js";
import { ConntrackUnavailableError } from "./errors.js";
import { CONNTRACK_QUERY_KEYS, type ConntrackPlan, type ConntrackQuery, planConntrack } from "./query.js";
import type { ConntrackNote } from "./report.js";
import { ConntrackScan, noteOf } from "./scan.js";

/**
 * ConntrackIteration is the stream of entries of a query. With `netns: "all"`, a namespace that
 * cannot be entered or listed goes to `failures` and the others go on; one without conntrack (or
 * that vanished) goes to `notes`, in every case.
 */
export class ConntrackIteration implements Iterable<ConntrackEntry> {
  readonly failures: NamespaceFailure[] = [];
  readonly notes: ConntrackNote[] = [];
  private readonly plan: ConntrackPlan;

  /** Checks the query at once (QueryError, ConntrackQueryError): nothing is sent before that. */
  constructor(private readonly query: ConntrackQuery) {
    checkOptions(query, CONNTRACK_QUERY_KEYS, "query");
    checkNamespaceSelection(query);
    this.plan = planConntrack(query);
  }

  *[Symbol.iterator](): Generator<ConntrackEntry> {
    for (const target of this.#targets()) {
      try {
        using scan = new ConntrackScan(target, this.plan);
        yield* scan.entries();
      } catch (err) {
        this.#record(target, err);
      }
    }
  }

  /** Every entry in an array. */
  toArray(): ConntrackEntry[] {
    const out: ConntrackEntry[] = [];
    for (const target of this.#targets()) {
      try {
        using scan = new ConntrackScan(target, this.plan);
        scan.each((e) => {
          out.push(e);
        });
      } catch (err) {
        this.#record(target, err);
      }
    }
    return out;
  }

  /** The namespaces to list (none when nothing can match), failures and notes starting afresh. */
  *#targets(): Generator<Target> {
    this.failures.length = 0;
    this.notes.length = 0;
    if (this.plan.nothing) return;
    yield* targetsOf(this.query, { failures: this.failures, notes: this.notes });
  }

  #record(target: Target, err: unknown): void {
    if (err instanceof ConntrackUnavailableError) this.notes.push(noteOf(target, err));
    else recordOrThrow(this.query.netns, target, err, this.failures);
  }
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
