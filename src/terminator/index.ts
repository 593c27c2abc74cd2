export { AddressError, type Backend, type BackendProtocol, parseBackend } from "./backend.js";
export {
  BackendTerminator,
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
