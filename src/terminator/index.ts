export type {
  BackendName,
  BackendProtocol,
  BackendResult,
  BatchNamespaceResult,
  BatchTerminationReport,
  ConntrackTally,
  NamespaceResult,
  Tally,
  TerminationReport,
} from "../report.js";
export { AddressError, type Backend, checkBackend, type ParsedBackend, parseBackend } from "./backend.js";
export { type ConntrackDeleter, conntrackSelections } from "./conntrack-step.js";
export type { NamespaceEntry, NamespaceSource } from "./sources.js";
export {
  BackendTerminator,
  checkTerminatorConfig,
  type Logger,
  type SocketsDestroyer,
  type TerminateOptions,
  type TerminatorConfig,
  terminateUDPConnectionsToBackend,
} from "./terminator.js";
