export type { ConntrackTally } from "../conntrack/index.js";
export { AddressError, type Backend, type BackendProtocol, parseBackend } from "./backend.js";
export type { BackendName, Tally } from "./backend-set.js";
export { type ConntrackDeleter, conntrackSelections } from "./conntrack-step.js";
export type {
  BackendResult,
  BatchNamespaceResult,
  BatchTerminationReport,
  NamespaceResult,
  TerminationReport,
} from "./report.js";
export type { NamespaceEntry, NamespaceSource } from "./sources.js";
export {
  BackendTerminator,
  type Logger,
  type SocketsDestroyer,
  type TerminateOptions,
  type TerminatorConfig,
  terminateUDPConnectionsToBackend,
} from "./terminator.js";
