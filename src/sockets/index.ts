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
export type { DestroyFailure, DestroyOutcome, DestroyReport, DestroyStop } from "./destroy-report.js";
export {
  AbortError,
  type AbortSignalLike,
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
} from "./iterate.js";
export { findSocketOwners, type SocketOwner } from "./owners.js";
export { type ProbeItem, type ProbeResult, probe } from "./probe.js";
export { PROTOCOL_NAMES } from "./protocols.js";
export { EXTENSION_NAMES, type SocketQuery, statesFromWords } from "./query.js";
export type { InetSocketFields } from "./revive.js";
export { type NamespaceFailure, type NetnsSelector, namespaceFailureOf } from "./targets.js";
