/** conntrack/: list and delete connection-tracking entries, in any network namespace. */
export type { ConntrackEntry, ConntrackTuple } from "../ctnl/index.js";
export { FlushGuardError } from "../ctnl/index.js";
export {
  type ConntrackDeleteReport,
  type ConntrackNamespaceReport,
  type DeleteConntrackQuery,
  deleteConntrack,
} from "./delete.js";
export type { EntryOutcomeListener } from "./deleter.js";
export { ConntrackQueryError, EmptySelectionError } from "./errors.js";
export { ConntrackIteration, type ConntrackNote, iterateConntrack, listConntrack } from "./iterate.js";
export type { ConntrackQuery, ConntrackSelection, ConntrackTupleSelection } from "./query.js";
export type { ConntrackFailure, ConntrackOutcome, ConntrackReport, ConntrackTally } from "./report.js";
export { addConntrackTally, emptyConntrackTally } from "./report.js";
export { ConntrackUnavailableError } from "./scan.js";
