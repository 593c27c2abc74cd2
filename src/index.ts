/**
 * sockdiag: list and destroy Linux sockets through netlink sock_diag, in any network namespace.
 *
 * @example
 * import { listSockets, destroySockets, terminateUDPConnectionsToBackend } from "sockdiag";
 * const udp = listSockets({ protocols: ["udp"], states: ["established"], filter: "dst 10.0.0.5:53" });
 * const report = terminateUDPConnectionsToBackend("10.0.0.5:53");
 */
export * from "./conntrack/index.js";
export * from "./diag/socket.js";
export { STATE_NAMES, type StateName, stateWords } from "./diag/states.js";
export {
  type FilterNode,
  FilterResolveError,
  FilterSyntaxError,
  filterFromObject,
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
  NetNS,
  NetnsAsyncCallbackError,
  type NetnsEntry,
  NetnsError,
  NetnsExistsError,
  NetnsIteration,
  type NetnsNote,
  NetnsNotFoundError,
  NetnsPoisonedError,
  type NetnsRef,
  NetnsRestoreError,
  NetnsUnreadableError,
  NotANetnsError,
  type NotANetnsKind,
  netnsNote,
  type PinnedNetns,
  remove as removeNetns,
  reopenNetns,
  runIn,
  type WalkOptions,
  walkNetns,
} from "./netns/index.js";
export * from "./sockets/index.js";
export { SockdiagError, SysError } from "./sys/errors.js";
export * from "./terminator/index.js";
