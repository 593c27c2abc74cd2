/**
 * The errors a destroy or delete run throws whatever it destroys: the caller's signal, the caller's
 * predicate, and a selection that would match everything.
 */
import { QueryError } from "../options/index.js";
import { type AbortSignalLike, sockdiagError } from "../sys/errors.js";

export type { AbortSignalLike };

/**
 * AbortError: the caller's signal aborted a call. Requests already sent were finished first; `report`
 * says what was done before the stop (for a destroy, every socket destroyed so far; sockets found
 * but not attempted are counted as skipped), and `cause` is the signal's reason.
 */
export class AbortError<Report = unknown> extends sockdiagError("AbortError", "ABORT_ERR") {
  declare report: Report | undefined;

  constructor(signal?: AbortSignalLike, report?: Report) {
    super("the operation was aborted", { report }, signal?.reason);
  }
}

/** Throw AbortError when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignalLike | undefined): void {
  if (signal?.aborted) throw new AbortError(signal);
}

/**
 * PredicateError: the caller's predicate threw (`cause`), which ends a destroy (or conntrack
 * delete) run. `report` holds what was done before, balanced: what was queued but not sent is
 * `skipped` (a socket destroy's stops say ECANCELED).
 */
export class PredicateError<Report = unknown> extends sockdiagError(
  "PredicateError",
  "ERR_SOCKDIAG_PREDICATE",
) {
  declare readonly report: Report;
  /** `run`: what the predicate was asked about, "destroy" or "delete". */
  constructor(report: Report, cause: unknown, run = "destroy") {
    super(`the ${run} predicate threw: ${messageOf(cause)}`, { report }, cause);
  }
}

/**
 * The predicate's exception on its way out of one namespace's run, marked so that it is never
 * taken for the namespace's own failure.
 */
export class PredicateThrew {
  /** The exception's message, for reports. */
  readonly message: string;
  constructor(readonly cause: unknown) {
    this.message = messageOf(cause);
  }
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** Ask `predicate` about `item`; what it throws comes out as PredicateThrew. */
export function approves<T>(predicate: (item: T) => boolean, item: T): boolean {
  try {
    return predicate(item);
  } catch (err) {
    throw new PredicateThrew(err);
  }
}

/**
 * EmptySelectionError: a destroy or delete whose selection names nothing — no filter, address,
 * port, zone or mark, or only wildcards (`*`, `0.0.0.0/0`, a zero mark mask) — and no predicate:
 * every socket or entry of its protocols would go. Refused unless `all: true` says so.
 */
export class EmptySelectionError extends QueryError {
  override readonly name = "EmptySelectionError";
  override readonly code = "ERR_SOCKDIAG_EMPTY_SELECTION";
  constructor(field: string, value: string, what: string) {
    super(
      field,
      value,
      `a selection of nothing but wildcards (or none) without a predicate would ${what}; narrow it, or pass all: true to mean it`,
    );
  }
}
