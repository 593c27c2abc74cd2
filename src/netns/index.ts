/**
 * netns/: network namespace handles, running code and opening netlink sockets inside a namespace
 * without the calling thread staying there, pinning like `ip netns`, and finding namespaces.
 */
export { type CreateOptions, create } from "./create.js";
export {
  inNetns,
  type NetlinkOpener,
  openNetlinkIn,
  runIn,
  ThreadNetns,
  type ThreadSyscalls,
  threadNetns,
} from "./enter.js";
export {
  InvalidNetnsNameError,
  isFatalNetnsError,
  isVanishedNetns,
  NetnsAsyncCallbackError,
  type NetnsCause,
  NetnsError,
  NetnsExistsError,
  type NetnsNote,
  NetnsNotFoundError,
  NetnsPoisonedError,
  NetnsRestoreError,
  NetnsUnreadableError,
  NotANetnsError,
  type NotANetnsKind,
  PinDirectoryNotFoundError,
} from "./errors.js";
export { NetNS } from "./handle.js";
export { current, fromPath, fromPid } from "./open.js";
export {
  add,
  DEFAULT_NETNS_DIRS,
  fromName,
  NETNS_RUN_DIR,
  type PinOptions,
  remove,
  validateNetnsName,
} from "./pinned.js";
export { type PodOfProcess, podOfCgroupPath, podsOfCgroupFile } from "./pods.js";
export { readProcNet } from "./proc-net.js";
export {
  type LocatedNetns,
  type LocateOptions,
  locateNetns,
  type NetnsIdentity,
  netnsProcesses,
  type ProcessScan,
  type ProcessScanOptions,
} from "./processes.js";
export { fromLabel, type NetnsRef, reopenNetns } from "./ref.js";
export {
  checkNamespaceSelection,
  KeptTargets,
  type NamespaceSelection,
  type NetnsSelector,
  SELECTION_KEYS,
  type Target,
  targetLabel,
  targetsOf,
  targetsOfRefs,
  type WalkFindings,
} from "./selection.js";
export {
  conntrackEntries,
  conntrackEntriesOf,
  HeldSockstat,
  readSnmpCounter,
  readSockstat,
  readSockstatFields,
  type SocketCounts,
  type SockstatFields,
  udpChildHashEntries,
  udpHashEntries,
} from "./sockstat.js";
export {
  allNetns,
  type DiscoveredNetns,
  discoverNetns,
  HOST_NETNS_NAME,
  type NamespaceFailure,
  type NamespaceNote,
  type NetnsEntry,
  NetnsIteration,
  type PinnedNetns,
  recordNetnsError,
  type WalkOptions,
  walkNetns,
} from "./walk.js";
