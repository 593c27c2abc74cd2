/**
 * The destroy/delete runner: the one plan destroySockets and deleteConntrack follow. For each
 * namespace the selection visits it opens a scan, hands every candidate the predicate approves to a
 * batcher (or, in a dry run, only counts it as it would have acted on it), finishes the batches on
 * the dump's own connection — a second one is opened only if a batch fills while the dump runs —
 * and adds the namespace's report to the total, also when the namespace fails half way. A
 * namespace that fails for a reason of its own is recorded and the walk goes on; the caller's
 * signal and predicate end the run with the report so far.
 */
import { FilterResolveError } from "../filter/index.js";
import type { NetlinkConnection } from "../netlink/index.js";
import { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "../netlink/index.js";
import {
  checkNamespaceSelection,
  isFatalNetnsError,
  type NamespaceFailure,
  type NamespaceNote,
  type NamespaceSelection,
  NetnsError,
  type Target,
  targetLabel,
  targetsOf,
} from "../netns/index.js";
import {
  checkBoolean,
  checkFunction,
  checkOptions,
  checkPositiveInteger,
  type KnownKeys,
} from "../options/index.js";
import { drain, type NamespaceStep, scheduleFor } from "../schedule/index.js";
import { type AbortSignalLike, type SockdiagError, SysError } from "../sys/errors.js";
import { AbortError, approves, PredicateError, PredicateThrew, throwIfAborted } from "./errors.js";
import type { RunItem, RunReport, Tally, WouldOf } from "./report.js";

/** What every destroy and delete takes besides its selection of items. */
export interface RunOptions<T extends RunItem> extends NamespaceSelection {
  /**
   * Called with each candidate the kernel and the query selected; answers true to destroy (or
   * delete) it, false to keep it. Must be synchronous. An exception it throws, or any other answer
   * (a Promise, "false", 1), ends the run: it is thrown as PredicateError, which carries the report
   * of what was done before (what was queued but not sent counted as skipped); that item is kept.
   */
  predicate?: (item: T) => boolean;
  /**
   * Allow a selection that names nothing (or only wildcards) without a predicate: every item of
   * its protocols. Without it, such a run throws EmptySelectionError before anything is sent.
   */
  all?: boolean;
  /** Find and count, change nothing. */
  dryRun?: boolean;
  /** Requests per write. */
  batchSize?: number;
  /**
   * Checked before each namespace, each write and each candidate of a dry run: once aborted, no
   * further request is sent (the batch in flight is finished) and AbortError is thrown with the
   * report so far (what was found but not sent counted as skipped).
   */
  signal?: AbortSignalLike;
}

/** The keys of RunOptions, for a call's option table. */
export const RUN_OPTION_KEYS = {
  netns: true,
  netnsDirs: true,
  discover: true,
  predicate: true,
  all: true,
  dryRun: true,
  batchSize: true,
  signal: true,
} as const satisfies KnownKeys<RunOptions<RunItem>>;

/**
 * Check the options of a run as a caller gave them: an object of the `known` keys (its call's),
 * its selection of namespaces, and the options every run shares. Throws QueryError naming the field.
 */
export function checkRunOptions(options: unknown, known: KnownKeys<object>): void {
  checkOptions(options, known, "query");
  const o = options as Record<string, unknown>;
  checkNamespaceSelection(o);
  checkBoolean(o.all, "all");
  checkBoolean(o.dryRun, "dryRun");
  checkPositiveInteger(o.batchSize, "batchSize");
  checkFunction(o.predicate, "predicate");
  checkFunction(o.onOutcome, "onOutcome");
}

/** A namespace's scan: the dump's connection there, and a way to open another. */
export interface RunScan extends Disposable {
  readonly target: Target;
  readonly conn: NetlinkConnection;
  /** The namespace's own count says it holds nothing: its scan visits nothing, no batch is made. */
  readonly empty?: boolean;
  openAnother(): NetlinkConnection;
}

/** What destroys or deletes the items of one namespace, in batches, counting every outcome. */
export interface Batcher<Args extends unknown[], R> {
  readonly report: R;
  add(...args: Args): void;
  /** The dump is over: send what is queued on the dump's own connection, and settle every answer. */
  finish(conn: NetlinkConnection): void;
  /** The caller's signal aborted mid-dump: nothing more is sent, the rest is skipped; throws AbortError. */
  abort(): never;
  /** The predicate threw (`reason`): nothing more is sent, what is queued counts as skipped. */
  stop(reason: string): void;
  /** The namespace failed half way (`err`): what is queued or unverified counts as failed. */
  abandon(err: unknown): void;
}

/** One kind of run — destroying sockets, deleting conntrack entries — as the runner drives it. */
export interface RunKind<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
> {
  /** What a PredicateError says the predicate was asked about: "destroy", "delete". */
  readonly verb: string;
  /** The selection can match nothing (an empty list of alternatives): no namespace is visited. */
  readonly nothing?: boolean;
  /** Open the scan in a namespace. */
  open(target: Target): S;
  /**
   * Send the first dump of a scan just opened on another thread, so that the namespace's walk can
   * run before its turn (see schedule/); true when it has nothing to walk.
   */
  sendAhead?(scan: S): boolean;
  /** Dump the namespace, calling `visit` with each candidate; yields between receive batches. */
  scan(scan: S, visit: (...args: Args) => void): Iterable<void>;
  /** The batcher of a real run, on the connections `connect` gives (a second one, opened lazily). */
  batcher(scan: S, connect: () => NetlinkConnection): Batcher<Args, R>;
  /** A report with nothing counted. */
  emptyReport(dryRun: boolean): R;
  /** Add a namespace's report into the total. */
  add(total: R, part: R): void;
  /** Where the kind's guarded listeners put what the caller's onOutcome threw (see guardListener). */
  readonly callbackErrors?: SockdiagError[];
  /** What a dry run counts each candidate as: "wouldDestroy", "wouldDelete". */
  readonly would: WouldOf<T>;
  /** Told each candidate of a dry run. */
  onWould?: ((item: T) => void) | undefined;
  /** The note for a namespace where there is nothing to do (`err` says why); undefined: not a note. */
  noteOf?(err: unknown, target: Target): NamespaceNote<string> | undefined;
}

/**
 * Run `kind` over every namespace `options` selects (or over `targets`, for a caller that walks
 * the namespaces itself), as schedule/ schedules them, one step per receive batch of each dump (a
 * caller that awaits between steps keeps its event loop running). Returns the balanced report.
 * Throws, with the report so far on the error: AbortError, PredicateError; without it, a failure
 * of a single namespace, or one that concerns every namespace (see isNamespaceScoped).
 */
export function* runInSteps<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(
  kind: RunKind<T, Args, S, R>,
  options: RunOptions<T>,
  targets?: Iterable<Target>,
): Generator<void, RunReport<R>, void> {
  const total = emptyRunReport(kind, options);
  if (kind.nothing) return total;
  const step: NamespaceStep<void, S> = {
    ...(kind.sendAhead ? { open: (target: Target) => kind.open(target), sendAhead: kind.sendAhead } : {}),
    run: (target, opened) => inTarget(kind, options, total, target, opened),
  };
  yield* reportingAbort(total, scheduleFor().run(targets ?? targetsOf(options, total), step, { done() {} }));
  return total;
}

/** runInSteps to the end without pausing. */
export function runToEnd<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(kind: RunKind<T, Args, S, R>, options: RunOptions<T>, targets?: Iterable<Target>): RunReport<R> {
  return drain(runInSteps(kind, options, targets));
}

/**
 * runToEnd in `target` alone, for a caller whose schedule walks the namespaces (a terminator's run
 * prepared once), on the scan opened there ahead if one was: `options`' own selection is not used,
 * and a failure there is the single namespace's (thrown when opening, recorded after work began).
 */
export function runInTarget<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(kind: RunKind<T, Args, S, R>, options: RunOptions<T>, target: Target, opened?: S): RunReport<R> {
  // Object.assign, not a spread and a property: see emptyRunReport.
  const single = Object.assign({}, options, { netns: target.netns });
  const total = emptyRunReport(kind, single);
  if (kind.nothing) {
    opened?.[Symbol.dispose]();
    return total;
  }
  drain(reportingAbort(total, inTarget(kind, single, total, target, opened)));
  return total;
}

/** `steps` to their end; an AbortError they throw carries `total`, the report so far. */
function* reportingAbort(total: object, steps: Generator<void, void, void>): Generator<void, void, void> {
  try {
    yield* steps;
  } catch (err) {
    if (err instanceof AbortError) err.report = total;
    throw err;
  }
}

/** A report with nothing counted yet. */
function emptyRunReport<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(kind: RunKind<T, Args, S, R>, options: RunOptions<T>): RunReport<R> {
  // Added to the kind's report, not spread with it into another object: Node 20's V8 takes
  // microseconds over a spread followed by more properties, and a terminator's run makes a report
  // in every namespace.
  return Object.assign(kind.emptyReport(Boolean(options.dryRun)), {
    namespaces: [],
    failures: [],
    notes: [],
    callbackErrors: kind.callbackErrors ?? [],
  });
}

/**
 * The run in `target` (on `opened`, its scan opened ahead, if any), its report added to `total`; a
 * failure of the namespace alone is recorded (or thrown, see recordOrThrow).
 */
function* inTarget<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(
  kind: RunKind<T, Args, S, R>,
  options: RunOptions<T>,
  total: RunReport<R>,
  target: Target,
  opened: S | undefined,
): Generator<void> {
  using ahead = opened;
  throwIfAborted(options.signal);
  try {
    using fresh = ahead ? undefined : kind.open(target);
    yield* runIn(kind, (ahead ?? fresh)!, options, total);
  } catch (err) {
    if (err instanceof PredicateThrew) throw new PredicateError(total, err.cause, kind.verb, err.message);
    // From opening the namespace, or what runIn could not record (not the namespace's own).
    const note = kind.noteOf?.(err, target);
    if (note) total.notes.push(note);
    else recordOrThrow(options.netns, target, err, total.failures);
  }
}

/** The run in one namespace; its report goes into `total` also when it fails half way. */
function* runIn<
  T extends RunItem,
  Args extends [T, ...unknown[]],
  S extends RunScan,
  R extends Tally<T> & { dryRun: boolean },
>(kind: RunKind<T, Args, S, R>, scan: S, options: RunOptions<T>, total: RunReport<R>): Generator<void> {
  const { predicate, signal } = options;
  let second: NetlinkConnection | undefined;
  const connect = (): NetlinkConnection => {
    second ??= scan.openAnother();
    return second;
  };
  const batcher = options.dryRun || scan.empty ? undefined : kind.batcher(scan, connect);
  const report = batcher?.report ?? kind.emptyReport(Boolean(options.dryRun));
  const visit = (...args: Args): void => {
    if (predicate && !approves(predicate, args[0])) return;
    if (batcher) {
      batcher.add(...args);
      return;
    }
    throwIfAborted(signal);
    const counts: Tally<T> = report;
    counts.matched++;
    counts[kind.would]++;
    kind.onWould?.(args[0]);
  };
  try {
    for (const _ of kind.scan(scan, visit)) {
      if (signal?.aborted) batcher ? batcher.abort() : throwIfAborted(signal);
      yield;
    }
    batcher?.finish(scan.conn);
  } catch (err) {
    if (err instanceof PredicateThrew) {
      batcher?.stop(`the predicate ${err.message}`);
      throw err;
    }
    if (err instanceof AbortError) throw err;
    batcher?.abandon(err);
    const note = kind.noteOf?.(err, scan.target);
    if (note) total.notes.push(note);
    else if (isNamespaceScoped(err)) total.failures.push({ netns: targetLabel(scan.target), error: err });
    else throw err;
  } finally {
    second?.close();
    kind.add(total, report);
    total.namespaces.push(
      Object.assign({}, report, { failed: [...report.failed], netns: targetLabel(scan.target) }),
    );
  }
}

/**
 * After `err` in `target`: with "all", a namespace other than the caller's own that failed for a
 * reason of its own is recorded in `failures` and the walk goes on; anything else is rethrown (a
 * single namespace, the caller's own, a fatal or foreign error: the call itself cannot work).
 */
export function recordOrThrow(
  selector: NamespaceSelection["netns"],
  target: Target,
  err: unknown,
  failures: NamespaceFailure[],
): void {
  if (selector !== "all" || target.netns === undefined || !isNamespaceScoped(err)) throw err;
  failures.push({ netns: targetLabel(target), error: err });
}

/**
 * Whether an error concerns only the namespace it happened in, so that a run over several may
 * record it and go on: a namespace that cannot be entered, a kernel answer, a device name the
 * namespace lacks. Anything else — a failed return to the caller's namespace, a protocol the kernel
 * lacks, an exception from the caller's own predicate — ends the run.
 */
export function isNamespaceScoped(err: unknown): err is SockdiagError {
  if (isFatalNetnsError(err)) return false;
  return (
    err instanceof NetnsError ||
    err instanceof NetlinkError ||
    err instanceof NetlinkTimeoutError ||
    err instanceof NetlinkProtocolError ||
    err instanceof SysError ||
    err instanceof DecodeError ||
    err instanceof FilterResolveError
  );
}
