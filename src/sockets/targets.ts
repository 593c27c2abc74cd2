/**
 * Which network namespaces a query visits: the caller's own, one named by handle, name or path, or
 * all of them (the caller's first, then every pinned or discovered namespace, each once).
 */
import { current, discoverNetns, fromName, fromPath, type NetNS, type NetnsError } from "../netns/index.js";

/** A namespace selector: a handle, a pinned name, a path (anything with "/"), or "all". */
export type NetnsSelector = NetNS | string;

/** Where a multi-namespace run failed in one namespace; the others went on. */
export interface NamespaceFailure {
  /** The namespace's label (pinned name, "pid:N", or path). */
  netns: string;
  error: Error;
  /**
   * True when the namespace is one of another process that this process may not inspect (EACCES on
   * /proc/PID/ns/net, e.g. a more privileged pid 1): a visibility limit worth telling, not a failure.
   */
  unreadable?: boolean;
}

/** Options for selecting namespaces with "all". */
export interface NamespaceSourceOptions {
  /** Pin directories searched by "all". Default ["/run/netns"]. */
  netnsDirs?: readonly string[];
}

/** One namespace to visit: its handle (undefined = the calling thread's own) and its label. */
export interface Target {
  netns: NetNS | undefined;
  label: string | undefined;
}

/**
 * Open the single namespace a selector names. The caller owns the handle. Throws
 * InvalidNetnsNameError, NetnsNotFoundError, NotANetnsError, NetnsError.
 */
export function openSelected(selector: NetnsSelector): Target {
  if (typeof selector !== "string") return { netns: selector.dup(), label: selector.label };
  if (selector.includes("/")) return { netns: fromPath(selector), label: selector };
  return { netns: fromName(selector), label: selector };
}

/**
 * Every namespace: the caller's own first (label undefined), then each pinned or discovered one.
 * Handles are lent until the generator moves on. Failures to open one go to `failures`.
 */
export function* allTargets(
  options: NamespaceSourceOptions,
  failures: NamespaceFailure[],
): Generator<Target> {
  using self = current();
  yield { netns: undefined, label: undefined };
  const found = discoverNetns(options.netnsDirs ? { dirs: options.netnsDirs } : {});
  let reported = 0;
  for (const ns of found) {
    for (; reported < found.errors.length; reported++) failures.push(asFailure(found.errors[reported]!));
    if (ns.netns.equals(self)) continue;
    yield {
      netns: ns.netns,
      label: ns.name ?? (ns.pids.length > 0 ? `pid:${ns.pids[0]}` : `net:[${ns.netns.ino}]`),
    };
  }
  for (; reported < found.errors.length; reported++) failures.push(asFailure(found.errors[reported]!));
}

function asFailure(error: NetnsError): NamespaceFailure {
  const unreadable =
    error.netns.startsWith("/proc/") && (error.cause as { code?: string } | undefined)?.code === "EACCES";
  return unreadable ? { netns: error.netns, error, unreadable } : { netns: error.netns, error };
}
