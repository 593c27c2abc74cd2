/**
 * sockdiag: list and destroy Linux sockets through netlink sock_diag, in any network namespace.
 * Everything here is synchronous; `sockdiag/promises` has the same calls off the main thread.
 * Every error class derives from SockdiagError and has a stable `code`.
 *
 * @example
 * import { listSockets, destroySockets, terminateUDPConnectionsToBackend } from "sockdiag";
 * const udp = listSockets({ protocols: ["udp"], states: ["established"], filter: "dst 10.0.0.5:53" });
 * const report = terminateUDPConnectionsToBackend("10.0.0.5:53");
 */
export {
  type ConntrackDeleteReport,
  type ConntrackEntry,
  type ConntrackNote,
  type ConntrackQuery,
  ConntrackQueryError,
  type ConntrackReport,
  ConntrackUnavailableError,
  type DeleteConntrackQuery,
  deleteConntrack,
  FlushGuardError,
  iterateConntrack,
  listConntrack,
} from "./conntrack/index.js";
export {
  type Extension,
  type InetFamily,
  type InetProtocol,
  InetSocket,
  type MemInfo,
  type Protocol,
  type SkMemInfo,
  type Socket,
  type TcpInfo,
  UnixSocket,
  type UnixType,
} from "./diag/socket.js";
export type { StateName } from "./diag/states.js";
export {
  type FilterNode,
  FilterResolveError,
  FilterSyntaxError,
  formatFilter,
  parseFilter,
  type StructuredFilter,
} from "./filter/index.js";
export { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "./netlink/index.js";
export {
  add as addNetns,
  allNetns,
  create as createNetns,
  current as currentNetns,
  type DiscoveredNetns,
  discoverNetns,
  fromName as netnsFromName,
  fromPath as netnsFromPath,
  fromPid as netnsFromPid,
  InvalidNetnsNameError,
  type LocatedNetns,
  type LocateOptions,
  locateNetns,
  type NamespaceSelection,
  NetNS,
  NetnsAsyncCallbackError,
  type NetnsEntry,
  NetnsError,
  NetnsExistsError,
  type NetnsIdentity,
  type NetnsNote,
  NetnsNotFoundError,
  NetnsPoisonedError,
  type NetnsRef,
  NetnsRestoreError,
  type NetnsSelector,
  NetnsUnreadableError,
  NotANetnsError,
  type NotANetnsKind,
  netnsProcesses,
  PinDirectoryNotFoundError,
  type PinnedNetns,
  type ProcessScan,
  type ProcessScanOptions,
  remove as removeNetns,
  reopenNetns,
  runIn as runInNetns,
  type WalkOptions,
  walkNetns,
} from "./netns/index.js";
export { QueryError } from "./options/index.js";
export {
  AbortError,
  type ConntrackFailure,
  type DestroyFailure,
  EmptySelectionError,
  type NamespaceFailure,
  type NamespaceNote,
  type Outcome,
  PredicateError,
  type RunOptions,
  type Tally,
} from "./run/index.js";
export {
  DestroyError,
  type DestroyQuery,
  type DestroyReport,
  type DestroySocketOptions,
  type DestroyStop,
  destroySocket,
  destroySockets,
  findSocketOwners,
  type InetSocketFields,
  iterateSockets,
  listSockets,
  type NamespacedDestroyReport,
  type NamespacedQuery,
  NamespacesFailedError,
  type ProbeItem,
  type ProbeResult,
  probe,
  type QuerySocket,
  type SocketIteration,
  type SocketOf,
  type SocketOwner,
  type SocketQuery,
  UnsupportedProtocolError,
} from "./sockets/index.js";
export { type AbortSignalLike, ForeignError, SockdiagError, SysError } from "./sys/errors.js";
export {
  AddressError,
  type Backend,
  type BackendProtocol,
  BackendTerminator,
  type BatchTerminationReport,
  checkBackend,
  type NamespaceResult,
  type ParsedBackend,
  type TerminateOptions,
  type TerminationReport,
  type TerminatorConfig,
  type TerminatorSeam,
  terminateUDPConnectionsToBackend,
} from "./terminator/index.js";
