/**
 * schedule/: how the namespaces of a call are scheduled: on one thread (schedule.ts), or shared
 * out over the worker pool (shared.ts).
 */
export { ruledOutFirst, shareOutKept } from "./one-pass.js";
export {
  drain,
  type LookAheadFigures,
  lookAhead,
  type NamespaceStep,
  type Schedule,
  type ScheduleSink,
  scheduleFor,
  serial,
} from "./schedule.js";
export {
  isShared,
  poolSize,
  type RunOn,
  runsOf,
  type SharedOutcome,
  shareOut,
  WORKER_BYTES,
  workersFor,
} from "./shared.js";
