/**
 * What every destroy and delete run counts, and the shape of its report over namespaces. Every
 * tally balances — matched = done + would + gone + failed.length + skipped, where done is
 * `destroyed` for sockets and `deleted` for conntrack entries, and would (`wouldDestroy`,
 * `wouldDelete`) what a dry run found and left alone (done stays 0 there) — and `failed` is the
 * list of failure records (the socket or entry, the kernel's errno, its name, why).
 */
import type { ConntrackEntry } from "../ctnl/index.js";
import type { Socket } from "../diag/socket.js";
import type { NamespaceFailure, NamespaceNote } from "../netns/index.js";
import { asSockdiagError, type SockdiagError } from "../sys/errors.js";

export type { NamespaceFailure, NamespaceNote };

/** What a run destroys or deletes: sockets, or conntrack entries. */
export type RunItem = Socket | ConntrackEntry;

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

/** The failure record of an item: DestroyFailure for sockets, ConntrackFailure for entries. */
export type FailureOf<T extends RunItem> = T extends ConntrackEntry ? ConntrackFailure : DestroyFailure;

/** What was done to an item: "destroyed" for sockets, "deleted" for entries. */
export type DoneOf<T extends RunItem> = T extends ConntrackEntry ? "deleted" : "destroyed";

/** What a dry run counts for an item it would have acted on: "wouldDestroy" for sockets, "wouldDelete" for entries. */
export type WouldOf<T extends RunItem> = T extends ConntrackEntry ? "wouldDelete" : "wouldDestroy";

/**
 * Tally: the counts of one run, namespace, backend or termination, for sockets (`Tally`, with
 * `destroyed` and `wouldDestroy`) or conntrack entries (`Tally<ConntrackEntry>`, with `deleted`
 * and `wouldDelete`).
 */
export type Tally<T extends RunItem = Socket> = {
  /** Matched the query, filter and predicate. */
  matched: number;
  /** Closed, expired or replaced between the dump and the request (ENOENT): not a failure. */
  gone: number;
  /** The failures themselves: count them with `.length`. */
  failed: FailureOf<T>[];
  /** Matched but not attempted, because an earlier answer (or a stop) made the attempt pointless. */
  skipped: number;
} & { [K in DoneOf<T> | WouldOf<T>]: number };

/** A tally in numbers only (failures counted, not listed): what logs and metrics carry. */
export type TallyCounts<T extends RunItem = Socket> = Omit<Tally<T>, "failed"> & { failed: number };

/** What happened to one matched item; a dry run's is WouldOf (its only outcome but "skipped"). */
export type Outcome<T extends RunItem = Socket> = DoneOf<T> | WouldOf<T> | "gone" | "failed" | "skipped";

/** A tally of sockets with nothing counted. */
export function emptyTally(): Tally;
/** A tally of conntrack entries with nothing counted. */
export function emptyTally(done: "deleted"): Tally<ConntrackEntry>;
export function emptyTally(done: "destroyed" | "deleted" = "destroyed"): Tally | Tally<ConntrackEntry> {
  // Literal keys, not computed ones: each shape made the same way, fast to copy and add to.
  return done === "deleted"
    ? { matched: 0, deleted: 0, wouldDelete: 0, gone: 0, failed: [], skipped: 0 }
    : { matched: 0, destroyed: 0, wouldDestroy: 0, gone: 0, failed: [], skipped: 0 };
}

/** The counts of a tally, whatever it counts, as the arithmetic below sees them. */
type Counts = { failed: unknown[] } & Record<string, unknown>;

/** Add the counts and failures of `other` (a tally, or a report holding one) into `total`. */
export function addTally(total: Tally, other: Tally): void;
export function addTally(total: Tally<ConntrackEntry>, other: Tally<ConntrackEntry>): void;
export function addTally(total: object, other: object): void {
  const sum = total as unknown as Counts;
  const add = other as unknown as Counts;
  for (const key of ["matched", "destroyed", "deleted", "wouldDestroy", "wouldDelete", "gone", "skipped"])
    if (typeof add[key] === "number") sum[key] = (sum[key] as number) + (add[key] as number);
  sum.failed.push(...add.failed);
}

/** Count one outcome (with its failure, for "failed"). */
export function countOutcome(tally: Tally, outcome: Outcome, failure?: DestroyFailure): void;
export function countOutcome(
  tally: Tally<ConntrackEntry>,
  outcome: Outcome<ConntrackEntry>,
  failure?: ConntrackFailure,
): void;
export function countOutcome(tally: object, outcome: string, failure?: unknown): void {
  const counts = tally as unknown as Counts;
  counts.matched = (counts.matched as number) + 1;
  if (outcome === "failed") {
    if (failure) counts.failed.push(failure);
  } else counts[outcome] = (counts[outcome] as number) + 1;
}

/**
 * A run's report over every namespace it visited: its total (the namespace report's shape, summed),
 * each namespace's own report, the namespaces that failed, and those passed over with a note.
 */
export type RunReport<R> = R & {
  /** Each namespace visited, in order, with its counts (also when it failed half way). */
  namespaces: (R & { netns: string })[];
  /** Namespaces that could not be visited, or failed half way (their counts are in the report). */
  failures: NamespaceFailure[];
  /** Namespaces passed over without that being a failure (vanished; no conntrack there). */
  notes: NamespaceNote<string>[];
  /**
   * What the caller's onOutcome threw: a listener's exception never ends the run nor changes a
   * count; it is kept here, once per throw.
   */
  callbackErrors: SockdiagError[];
};

/**
 * `listener` guarded: what it throws goes to `errors` (as a SockdiagError) and the run goes on.
 * Undefined stays undefined, so that nothing is built for a run nobody listens to.
 */
export function guardListener<A extends unknown[]>(
  listener: ((...args: A) => void) | undefined,
  errors: SockdiagError[],
): ((...args: A) => void) | undefined {
  if (!listener) return undefined;
  return (...args) => {
    try {
      listener(...args);
    } catch (err) {
      errors.push(asSockdiagError(err));
    }
  };
}
