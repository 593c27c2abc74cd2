/**
 * run/: what every destroy and delete shares, whatever it destroys — the runner, its options, its
 * errors and its reports.
 */
export {
  AbortError,
  type AbortSignalLike,
  approves,
  EmptySelectionError,
  PredicateError,
  PredicateThrew,
  throwIfAborted,
} from "./errors.js";
export {
  addTally,
  type ConntrackFailure,
  countOutcome,
  type DestroyFailure,
  type DoneOf,
  emptyTally,
  type FailureOf,
  guardListener,
  type NamespaceFailure,
  type NamespaceNote,
  type Outcome,
  type RunItem,
  type RunReport,
  type Tally,
  type TallyCounts,
  type WouldOf,
} from "./report.js";
export {
  type Batcher,
  checkRunOptions,
  isNamespaceScoped,
  RUN_OPTION_KEYS,
  type RunKind,
  type RunOptions,
  type RunScan,
  recordOrThrow,
  runInSteps,
  runInTarget,
  runToEnd,
} from "./runner.js";
