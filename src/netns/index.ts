/**
 * netns/: network namespace handles, running code and opening netlink sockets inside a namespace
 * without the calling thread staying there, pinning like `ip netns`, and finding namespaces.
 */
export { type CreateOptions, create } from "./create.js";
export { type DiscoveredNetns, discoveredLabel, discoverNetns } from "./discover.js";
export { openNetlinkIn, runIn, ThreadNetns, type ThreadSyscalls, threadNetns } from "./enter.js";
export {
  InvalidNetnsNameError,
  isFatalNetnsError,
  isVanishedNetns,
  NetnsAsyncCallbackError,
  type NetnsCause,
  NetnsError,
  NetnsExistsError,
  NetnsNotFoundError,
  NetnsPoisonedError,
  NetnsRestoreError,
  NotANetnsError,
  PinDirectoryNotFoundError,
} from "./errors.js";
export { NetNS } from "./handle.js";
export { type AllNetnsOptions, allNetns, NetnsIteration, type PinnedNetns } from "./iterate.js";
export { current, fromPath, fromPid } from "./open.js";
export { add, fromName, NETNS_RUN_DIR, type PinOptions, remove, validateNetnsName } from "./pinned.js";
