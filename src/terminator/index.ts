export { type Backend, checkBackend, type ParsedBackend, parseBackend } from "./backend.js";
export { BackendSet } from "./backend-set.js";
export {
  checkTerminatorConfig,
  type Logger,
  type TerminateOptions,
  type TerminatorConfig,
} from "./config.js";
export { conntrackSelections } from "./conntrack-step.js";
export { AddressError, OnePassUnavailableError } from "./errors.js";
export {
  type FindSockets,
  GivenVerdicts,
  type NamespaceVerdict,
  type OnePassMode,
  type OnePassSummary,
  onePassPath,
} from "./one-pass.js";
export {
  type BackendName,
  type BackendProtocol,
  type BackendResult,
  type BatchNamespaceResult,
  type BatchTerminationReport,
  emptyBatchReport,
  type NamespaceResult,
  singleReport,
  type TerminationReport,
} from "./report.js";
export {
  BackendTerminator,
  ruledOutResult,
  type SharedPlan,
  type TerminatorSeam,
  terminateUDPConnectionsToBackend,
} from "./terminator.js";
