/**
 * Every error sockdiag throws, one class per kind, each from its layer's own errors module. All
 * derive from SockdiagError and have a stable `code`. Reached as `errors` from "sockdiag" (and in
 * sockdiag/promises, rebuilt as the same classes on the caller's thread).
 *
 * @example
 * import { errors, listSockets } from "sockdiag";
 * try { listSockets({ netns: "pod-a" }); } catch (err) { if (err instanceof errors.NetnsNotFoundError) ... }
 */
export { AsmError, BtfError, VerifierError } from "./bpf/errors.js";
export { ConntrackQueryError, ConntrackUnavailableError } from "./conntrack/errors.js";
export { FlushGuardError } from "./ctnl/errors.js";
export { FilterResolveError, FilterSyntaxError } from "./filter/errors.js";
export { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "./netlink/errors.js";
export {
  InvalidNetnsNameError,
  NetnsAsyncCallbackError,
  NetnsError,
  NetnsExistsError,
  NetnsNotFoundError,
  NetnsPoisonedError,
  NetnsRestoreError,
  NetnsUnreadableError,
  NotANetnsError,
  PinDirectoryNotFoundError,
} from "./netns/errors.js";
export { QueryError } from "./options/errors.js";
export { CallbackTimeoutError, WorkerStoppedError } from "./promises/worker-errors.js";
export { AbortError, EmptySelectionError, PredicateError } from "./run/errors.js";
export { DestroyError, NamespacesFailedError, UnsupportedProtocolError } from "./sockets/errors.js";
export { ForeignError, MisuseError, SockdiagError, SysError } from "./sys/errors.js";
export { AddressError, OnePassUnavailableError } from "./terminator/errors.js";
