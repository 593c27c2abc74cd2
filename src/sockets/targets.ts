/**
 * Which network namespaces a query visits: the caller's own, one named by handle, name or path, or
 * all of them (the caller's first, then every pinned or discovered namespace, each once).
 */

import { FilterResolveError } from "../filter/index.js";
import { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "../netlink/index.js";
import {
  fromLabel,
  isFatalNetnsError,
  type NamespaceFailure,
  type NetNS,
  NetnsError,
  type NetnsRef,
  walkNetns,
} from "../netns/index.js";
import { type SockdiagError, SysError } from "../sys/errors.js";
import { QueryError } from "./errors.js";

export type { NamespaceFailure };

/** A namespace selector: a handle, a pinned name, a path (anything with "/"), or "all". */
export type NetnsSelector = NetNS | string;

/** Options for selecting namespaces with "all". */
export interface NamespaceSourceOptions {
  /** Pin directories searched by "all". Default ["/run/netns"]. */
  netnsDirs?: readonly string[];
}

/**
 * Check `netnsDirs` as a caller gave it: an array of non-empty paths, or undefined. Throws
 * QueryError naming it otherwise (a lone string would be walked one character at a time).
 */
export function checkNetnsDirs(dirs: unknown): void {
  if (dirs === undefined) return;
  if (!Array.isArray(dirs))
    throw new QueryError(
      "netnsDirs",
      String(dirs),
      'expected an array of directory paths, e.g. ["/run/netns"]',
    );
  for (const d of dirs)
    if (typeof d !== "string" || d === "")
      throw new QueryError("netnsDirs", String(d), "each entry must be a directory path");
}

/**
 * One namespace to visit: its handle and what names it (both undefined: the calling thread's own),
 * and the label its sockets carry.
 */
export interface Target {
  netns: NetNS | undefined;
  ref: NetnsRef | undefined;
  label: string | undefined;
}

/**
 * Open the single namespace a selector names. The caller owns the handle. Throws
 * InvalidNetnsNameError, NetnsNotFoundError, NotANetnsError, NetnsError.
 */
function openSelected(selector: NetnsSelector): Target {
  const netns = typeof selector === "string" ? fromLabel(selector) : selector.dup();
  const ref = netns.ref;
  // A name or path the caller gave is what they call it; a handle's ref says what it is.
  if (typeof selector === "string") ref.label = selector;
  return { netns, ref, label: ref.label };
}

/**
 * The namespaces a query visits, in order: the one its `netns` names (opened here and closed when
 * the walk ends; undefined: the caller's own), or with "all" the caller's own and then every pinned
 * or discovered one, failures to open one going to `failures`.
 */
export function* targetsOf(
  selector: NetnsSelector | "all" | undefined,
  options: NamespaceSourceOptions,
  failures: NamespaceFailure[],
): Generator<Target> {
  if (selector === "all") {
    yield* allTargets(options, failures);
    return;
  }
  const target: Target =
    selector === undefined ? { netns: undefined, ref: undefined, label: undefined } : openSelected(selector);
  try {
    yield target;
  } finally {
    target.netns?.close();
  }
}

/**
 * After `err` in `target`: with "all", a namespace other than the caller's own that failed for a
 * reason of its own is recorded in `failures` and the walk goes on; anything else is rethrown (a
 * single namespace, the caller's own, a fatal or foreign error: the query itself cannot work).
 */
export function recordOrThrow(
  selector: NetnsSelector | "all" | undefined,
  target: Target,
  err: unknown,
  failures: NamespaceFailure[],
): void {
  if (selector !== "all" || target.netns === undefined || !isNamespaceScoped(err)) throw err;
  failures.push({ netns: target.label ?? "(host)", error: err });
}

/**
 * Every namespace: the caller's own first (label undefined), then each pinned or discovered one.
 * Handles are lent until the generator moves on. Failures to open one go to `failures`.
 */
function* allTargets(options: NamespaceSourceOptions, failures: NamespaceFailure[]): Generator<Target> {
  const found = walkNetns({ netnsDirs: options.netnsDirs, processes: true, host: "first" });
  let reported = 0;
  const report = () => {
    for (; reported < found.errors.length; reported++) failures.push(found.errors[reported]!);
  };
  for (const entry of found) {
    report();
    yield entry.host
      ? { netns: undefined, ref: undefined, label: undefined }
      : { netns: entry.netns, ref: entry.ref, label: entry.ref.label };
  }
  report();
}

/**
 * Whether an error concerns only the namespace it happened in, so that a run over several may
 * record it and go on: a namespace that cannot be entered, a kernel answer, a device name the
 * namespace lacks. Anything else — a failed return to the caller's namespace, a protocol the kernel
 * lacks, an exception from the caller's own predicate — ends the run.
 */
export function isNamespaceScoped(err: unknown): err is SockdiagError {
  if (isFatalNetnsError(err)) return false;
  return (
    err instanceof NetnsError ||
    err instanceof NetlinkError ||
    err instanceof NetlinkTimeoutError ||
    err instanceof NetlinkProtocolError ||
    err instanceof SysError ||
    err instanceof DecodeError ||
    err instanceof FilterResolveError
  );
}
