/**
 * Opening namespaces that already exist: the calling thread's, one at a path, one a process is in.
 * Every call refuses to run once a failed restore has poisoned the layer.
 */

import { threadNetns } from "./enter.js";
import { NetnsError, NetnsNotFoundError } from "./errors.js";
import { NetNS } from "./handle.js";

/**
 * current opens the calling thread's network namespace (/proc/thread-self/ns/net; inside runIn, the
 * namespace runIn entered). The caller owns it. Its `path` is /proc/PID/fd/FD (see NetNS.openThread).
 */
export function current(): NetNS {
  threadNetns.assertUsable();
  return NetNS.openThread();
}

/**
 * fromPath opens the network namespace file at `path` (/proc/PID/ns/net, a pinned file such as
 * /run/netns/NAME, /proc/self/fd/N). The caller owns it. Throws NetnsNotFoundError, NotANetnsError,
 * NetnsError.
 */
export function fromPath(path: string): NetNS {
  threadNetns.assertUsable();
  return NetNS.open(path);
}

/**
 * fromPid opens the network namespace of process `pid` (/proc/PID/ns/net: its main thread's). The
 * caller owns it. Throws NetnsError for a pid that is not a positive integer, NetnsNotFoundError when
 * no such process exists, NetnsError with EACCES when not allowed to look at it.
 */
export function fromPid(pid: number): NetNS {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new NetnsError(`pid ${pid}`, "not a process id");
  try {
    return fromPath(`/proc/${pid}/ns/net`);
  } catch (err) {
    if (err instanceof NetnsNotFoundError) throw new NetnsNotFoundError(`pid ${pid}`, "no such process");
    throw err;
  }
}
