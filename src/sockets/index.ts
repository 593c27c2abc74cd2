export type { DestroyFailure, DestroyOutcome, DestroyReport, DestroyStop } from "./destroy-report.js";
export { PermissionError, QueryError, UnsupportedProtocolError } from "./errors.js";
export { type NamespacedQuery, SocketIteration, iterateSockets, listSockets } from "./iterate.js";
export { type SocketOwner, findSocketOwners } from "./owners.js";
export { EXTENSION_NAMES, type SocketQuery, statesFromWords } from "./query.js";
export type { NamespaceFailure, NetnsSelector } from "./targets.js";
export { DestroyError, type DestroyQuery, type NamespacedDestroyReport, destroySocket, destroySockets } from "./destroy.js";
