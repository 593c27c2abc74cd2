/** conntrack/: list and delete connection-tracking entries, in any network namespace. */
export type { ConntrackEntry, ConntrackTuple } from "../ctnl/index.js";
export { FlushGuardError } from "../ctnl/index.js";
export {
  type DeleteConntrackQuery,
  deleteConntrack,
  type PreparedConntrackDelete,
  prepareConntrackDelete,
} from "./delete.js";
export type { EntryOutcomeListener } from "./deleter.js";
export { ConntrackQueryError, ConntrackUnavailableError } from "./errors.js";
export { ConntrackIteration, iterateConntrack, listConntrack } from "./iterate.js";
export { type ConntrackProbe, probeConntrack } from "./probe.js";
export type { ConntrackQuery, ConntrackSelection, ConntrackTupleSelection } from "./query.js";
export {
  type ConntrackDeleteReport,
  type ConntrackNote,
  type ConntrackReport,
  emptyConntrackReport,
} from "./report.js";
