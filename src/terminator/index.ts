export { type Backend, checkBackend, type ParsedBackend, parseBackend } from "./backend.js";
export { type ConntrackDeleter, conntrackSelections } from "./conntrack-step.js";
export { AddressError } from "./errors.js";
export type {
  BackendName,
  BackendProtocol,
  BackendResult,
  BatchNamespaceResult,
  BatchTerminationReport,
  NamespaceResult,
  TerminationReport,
} from "./report.js";
export {
  BackendTerminator,
  checkTerminatorConfig,
  type Logger,
  type SocketsDestroyer,
  type TerminateOptions,
  type TerminatorConfig,
  type TerminatorSeam,
  terminateUDPConnectionsToBackend,
} from "./terminator.js";
