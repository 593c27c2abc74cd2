/** conntrack/: list and delete connection-tracking entries, in any network namespace. */
export type { ConntrackEntry, ConntrackTuple } from "../ctnl/index.js";
export { FlushGuardError } from "../ctnl/index.js";
export {
  addConntrackTally,
  type ConntrackDeleteReport,
  type ConntrackFailure,
  type ConntrackNamespaceReport,
  type ConntrackNote,
  type ConntrackOutcome,
  type ConntrackReport,
  type ConntrackTally,
  emptyConntrackTally,
} from "../report.js";
export { type DeleteConntrackQuery, deleteConntrack } from "./delete.js";
export type { EntryOutcomeListener } from "./deleter.js";
export { ConntrackQueryError, EmptySelectionError } from "./errors.js";
export { ConntrackIteration, iterateConntrack, listConntrack } from "./iterate.js";
export type { ConntrackQuery, ConntrackSelection, ConntrackTupleSelection } from "./query.js";
export { ConntrackUnavailableError } from "./scan.js";
