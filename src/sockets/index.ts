export { PROTOCOL_NAMES } from "../diag/constants.js";
export { type NamespaceFailure, namespaceFailureOf } from "../netns/index.js";
export {
  addCounts,
  countOutcome,
  type DestroyCounts,
  type DestroyFailure,
  type DestroyOutcome,
  type DestroyReport,
  type DestroyStop,
  emptyCounts,
  type NamespacedDestroyReport,
} from "../report.js";
export {
  DestroyError,
  type DestroyQuery,
  type DestroySocketOptions,
  destroyInSteps,
  destroySocket,
  destroySockets,
} from "./destroy.js";
export type { InetMessageSink } from "./dump.js";
export {
  AbortError,
  type AbortSignalLike,
  NamespacesFailedError,
  PredicateError,
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
export { checkBoolean, checkOptions, isOptionsObject, type KnownKeys } from "./options.js";
export { findSocketOwners, type SocketOwner } from "./owners.js";
export { type ProbeItem, type ProbeResult, probe } from "./probe.js";
export {
  checkNetnsDirs,
  EXTENSION_NAMES,
  type NetnsSelector,
  type SocketQuery,
  statesFromWords,
} from "./query.js";
export { type InetSocketFields, revive } from "./revive.js";
