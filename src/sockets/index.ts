export { PROTOCOL_NAMES } from "../diag/constants.js";
export {
  DestroyError,
  type DestroyQuery,
  type DestroySocketOptions,
  destroyInSteps,
  destroySocket,
  destroySockets,
  type NamespacedDestroyReport,
  PredicateError,
} from "./destroy.js";
export {
  addCounts,
  countOutcome,
  type DestroyCounts,
  type DestroyFailure,
  type DestroyOutcome,
  type DestroyReport,
  type DestroyStop,
  emptyCounts,
} from "./destroy-report.js";
export {
  AbortError,
  type AbortSignalLike,
  NamespacesFailedError,
  QueryError,
  throwIfAborted,
  UnsupportedProtocolError,
} from "./errors.js";
export {
  iterateSockets,
  listSockets,
  type NamespacedQuery,
  type QuerySocket,
  SocketIteration,
  type SocketOf,
  throwIfNamespacesFailed,
} from "./iterate.js";
export { findSocketOwners, type SocketOwner } from "./owners.js";
export { type ProbeItem, type ProbeResult, probe } from "./probe.js";
export { EXTENSION_NAMES, type SocketQuery, statesFromWords } from "./query.js";
export type { InetSocketFields } from "./revive.js";
export { checkNetnsDirs, type NamespaceFailure, type NetnsSelector, namespaceFailureOf } from "./targets.js";
