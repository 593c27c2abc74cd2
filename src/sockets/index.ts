export { PermissionError, QueryError, UnsupportedProtocolError } from "./errors.js";
export { iterateSockets, listSockets } from "./iterate.js";
export { EXTENSION_NAMES, type SocketQuery, statesFromWords } from "./query.js";
export { type SocketOwner, findSocketOwners } from "./owners.js";
