export { PROTOCOL_NAMES } from "../diag/constants.js";
export {
  type DestroyQuery,
  type DestroySocketOptions,
  destroyInSteps,
  destroySocket,
  destroySockets,
  type PreparedDestroy,
  prepareDestroy,
} from "./destroy.js";
export type { InetMessageSink } from "./dump.js";
export { DestroyError, NamespacesFailedError, UnsupportedProtocolError } from "./errors.js";
export {
  iterateSockets,
  listSockets,
  type NamespacedQuery,
  type QuerySocket,
  SocketIteration,
  type SocketOf,
  throwIfNamespacesFailed,
} from "./iterate.js";
export { findSocketOwners, type SocketOwner, type SocketOwnerOptions } from "./owners.js";
export { hasDiagHandler, type ProbeItem, type ProbeResult, probe } from "./probe.js";
export { EXTENSION_NAMES, type SocketQuery, statesFromWords } from "./query.js";
export {
  addReport,
  type DestroyReport,
  type DestroyStop,
  emptyReport,
  type NamespacedDestroyReport,
} from "./report.js";
export { type InetSocketFields, revive } from "./revive.js";
export type { Scan } from "./scan.js";
export { SocketWatch, type WatchQuery } from "./watch.js";
