export { AddressError, type Backend, type BackendProtocol, parseBackend } from "./backend.js";
export type { BackendName, Tally } from "./backend-set.js";
export { type ConntrackDeleter, type ConntrackTally, conntrackSelections } from "./conntrack-step.js";
export {
  type BackendResult,
  BackendTerminator,
  type BatchNamespaceResult,
  type BatchTerminationReport,
  type Logger,
  type NamespaceEntry,
  type NamespaceResult,
  type NamespaceSource,
  type SocketsDestroyer,
  type TerminateOptions,
  type TerminationReport,
  type TerminatorConfig,
  terminateUDPConnectionsToBackend,
} from "./terminator.js";
