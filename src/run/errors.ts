/**
 * The errors a destroy or delete run throws whatever it destroys: the caller's signal, the caller's
 * predicate, and a selection that would match everything.
 */
import { describe, QueryError } from "../options/index.js";
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
 * PredicateError: the caller's predicate threw (`cause`), or answered something else than true or
 * false (`cause` a QueryError saying what), which ends a destroy (or conntrack delete) run.
 * `report` holds what was done before, balanced: what was queued but not sent is `skipped` (a
 * socket destroy's stops say ECANCELED).
 */
export class PredicateError<Report = unknown> extends sockdiagError(
  "PredicateError",
  "ERR_SOCKDIAG_PREDICATE",
) {
  declare readonly report: Report;
  /** `run`: what the predicate was asked about, "destroy" or "delete"; `what` it did, as PredicateThrew says. */
  constructor(report: Report, cause: unknown, run = "destroy", what = `threw: ${messageOf(cause)}`) {
    super(`the ${run} predicate ${what}`, { report }, cause);
  }
}

/**
 * The predicate's exception (or wrong answer) on its way out of one namespace's run, marked so
 * that it is never taken for the namespace's own failure.
 */
export class PredicateThrew {
  /** What the predicate did, for reports: "threw: <message>", or "answered <value>, not true or false". */
  readonly message: string;
  constructor(
    readonly cause: unknown,
    answered?: string,
  ) {
    this.message =
      answered === undefined ? `threw: ${messageOf(cause)}` : `answered ${answered}, not true or false`;
  }
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * Ask `predicate` about `item`. It answers true or false; what it throws, or any other answer (a
 * Promise, "false", 1), comes out as PredicateThrew: nothing is destroyed on an answer that is not
 * a plain yes.
 */
export function approves<T>(predicate: (item: T) => unknown, item: T): boolean {
  let answer: unknown;
  try {
    answer = predicate(item);
  } catch (err) {
    throw new PredicateThrew(err);
  }
  if (typeof answer === "boolean") return answer;
  const shown = answerText(answer);
  const thenable = shown === "a Promise";
  const detail = thenable
    ? "a synchronous call's predicate must answer true or false at once (sockdiag/promises awaits one)"
    : "expected true or false";
  throw new PredicateThrew(new QueryError("predicate", shown, detail), shown);
}

/** A predicate's answer as a message names it; a Promise's own rejection is silenced here. */
function answerText(answer: unknown): string {
  try {
    if (typeof answer === "bigint") return `${answer}n`;
    if (typeof answer === "string") return JSON.stringify(answer);
    if ((typeof answer === "object" || typeof answer === "function") && answer !== null) {
      if (typeof (answer as { then?: unknown }).then !== "function") return describe(answer);
      if (answer instanceof Promise) answer.catch(() => {});
      return "a Promise";
    }
    return String(answer);
  } catch {
    // A getter or a Promise subclass of the caller's that throws: the answer is refused all the same.
    return "(an object)";
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
