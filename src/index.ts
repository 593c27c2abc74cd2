/// <reference types="node" preserve="true" />
/**
 * sockdiag: list and destroy Linux sockets through netlink sock_diag, in any network namespace.
 * Everything here is synchronous; `sockdiag/promises` has the same calls off the main thread.
 * Every error class derives from SockdiagError, has a stable `code`, and is in `errors`.
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
  type ConntrackReport,
  type DeleteConntrackQuery,
  deleteConntrack,
  iterateConntrack,
  listConntrack,
} from "./conntrack/index.js";
export {
  type Extension,
  type InetFamily,
  type InetProtocol,
  InetSocket,
  type MemInfo,
  type NetlinkSocket,
  type PacketSocket,
  type PacketType,
  type Protocol,
  type SkMemInfo,
  type Socket,
  type TcpInfo,
  type TipcSocket,
  type TipcType,
  UnixSocket,
  type UnixType,
  type VsockSocket,
  type VsockType,
  type XdpSocket,
} from "./diag/socket.js";
export type { StateName } from "./diag/states.js";
export * as errors from "./errors.js";
export {
  type FilterNode,
  formatFilter,
  parseFilter,
  type StructuredFilter,
} from "./filter/index.js";
export {
  add as addNetns,
  create as createNetns,
  current as currentNetns,
  type DiscoveredNetns,
  fromName as netnsFromName,
  fromPath as netnsFromPath,
  fromPid as netnsFromPid,
  type LocatedNetns,
  type LocateOptions,
  locateNetns,
  type NamespaceSelection,
  NetNS,
  type NetnsEntry,
  type NetnsIdentity,
  type NetnsNote,
  type NetnsRef,
  type NetnsSelector,
  type NotANetnsKind,
  netnsProcesses,
  type PinnedNetns,
  type PodOfProcess,
  type ProcessScan,
  type ProcessScanOptions,
  remove as removeNetns,
  reopenNetns,
  runIn as runInNetns,
  type WalkOptions,
  walkNetns,
} from "./netns/index.js";
export type {
  ConntrackFailure,
  DestroyFailure,
  NamespaceFailure,
  NamespaceNote,
  Outcome,
  RunOptions,
  Tally,
  TallyCounts,
} from "./run/index.js";
export {
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
  type ProbeItem,
  type ProbeResult,
  probe,
  type QuerySocket,
  type SocketIteration,
  type SocketOf,
  type SocketOwner,
  type SocketOwnerOptions,
  type SocketQuery,
} from "./sockets/index.js";
export type { AbortSignalLike } from "./sys/errors.js";
export {
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
