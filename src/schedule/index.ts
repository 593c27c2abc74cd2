/** schedule/: how the namespaces of a call are scheduled (see schedule.ts). */
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
