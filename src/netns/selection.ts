/**
 * Which namespaces a call visits. Every call that runs somewhere — listing and destroying sockets,
 * listing and deleting conntrack entries, terminating backends, the CLI's -N / --netns / --pid /
 * --all-netns — takes one NamespaceSelection and walks the Targets it gives, in order.
 */
import { checkBoolean, describe, QueryError } from "../options/index.js";
import { threadNetns } from "./enter.js";
import { isFatalNetnsError, NetnsError } from "./errors.js";
import { NetNS } from "./handle.js";
import { current } from "./open.js";
import { fromLabel, type NetnsRef, reopenNetns } from "./ref.js";
import { type NamespaceFailure, type NamespaceNote, recordNetnsError, walkNetns } from "./walk.js";

/** One namespace: a handle, a pinned name, or a path (anything with "/"). */
export type NetnsSelector = NetNS | string;

/** Where a call runs. */
export interface NamespaceSelection {
  /**
   * A NetNS handle, a pinned name, a path (anything with "/"), or "all": the caller's own namespace
   * first, then every pinned one and (unless `discover` is false) every one a process is in, each
   * once. A selector naming the caller's own namespace is the caller's own. Default: the caller's
   * own (the terminator's: "all").
   */
  netns?: NetnsSelector | "all";
  /**
   * Pin directories searched by "all", each of which must exist. Default DEFAULT_NETNS_DIRS
   * (/run/netns, /var/run/cilium/netns, /var/run/docker/netns), each where it exists.
   */
  netnsDirs?: readonly string[];
  /** With "all": also the namespaces found only through /proc/PID/ns/net, named "pid:N". Default true. */
  discover?: boolean;
}

/** The keys of NamespaceSelection, for an option table (checkOptions). */
export const SELECTION_KEYS = { netns: true, netnsDirs: true, discover: true } as const satisfies Record<
  keyof NamespaceSelection,
  true
>;

/**
 * Check a selection as a caller gave it, before any namespace is visited: `netns` undefined,
 * "all", a name or path, or a NetNS handle that one of its openers made and that is still open;
 * `netnsDirs` an array of non-empty paths (a lone string would be walked one character at a time);
 * no NUL byte in a name or path (no file has one); `discover` a boolean. Throws QueryError naming
 * the field, MisuseError for a closed handle. Every call that visits namespaces checks its
 * selection here (sockdiag/promises on the caller's thread too).
 */
export function checkNamespaceSelection(selection: NamespaceSelection): void {
  const { netns, netnsDirs } = selection as { netns?: unknown; netnsDirs?: unknown };
  if (netns instanceof NetNS) NetNS.checkHandle(netns, "netns");
  else if (typeof netns === "string") checkPathText(netns, "netns");
  else if (netns !== undefined)
    throw new QueryError(
      "netns",
      describe(netns),
      'expected a NetNS handle, a pinned name, a path, or "all"',
    );
  if (netnsDirs !== undefined) {
    if (!Array.isArray(netnsDirs))
      throw new QueryError(
        "netnsDirs",
        describe(netnsDirs),
        'expected an array of directory paths, e.g. ["/run/netns"]',
      );
    for (const d of netnsDirs)
      if (typeof d !== "string" || d === "")
        throw new QueryError("netnsDirs", describe(d), "each entry must be a directory path");
      else checkPathText(d, "netnsDirs");
  }
  checkBoolean(selection.discover, "discover");
}

/** A name or path holds no NUL byte: the system would cut it there, or refuse it. */
function checkPathText(text: string, field: string): void {
  if (text.includes("\0"))
    throw new QueryError(field, text.replaceAll("\0", "\\0"), "a name or path cannot hold a NUL byte");
}

/**
 * One namespace to visit: its handle and what names it (both undefined: the calling thread's own),
 * and the label its results carry (undefined for the caller's own; reports say "(host)").
 */
export interface Target {
  netns: NetNS | undefined;
  ref: NetnsRef | undefined;
  label: string | undefined;
}

/** The label a report gives a target: "(host)" for the caller's own. */
export function targetLabel(target: Target): string {
  return target.label ?? "(host)";
}

/** What a walk over "all" met besides the namespaces: failures, and namespaces passed over. */
export interface WalkFindings {
  readonly failures: NamespaceFailure[];
  readonly notes: NamespaceNote<string>[];
}

const OWN: Target = { netns: undefined, ref: undefined, label: undefined };

/**
 * The namespaces `selection` visits, in order. A single one is opened here and closed when the
 * walk ends (throws InvalidNetnsNameError, NetnsNotFoundError, NotANetnsError, NetnsError); with
 * "all", handles are lent until the walk moves on, and the namespaces that cannot be opened go to
 * `findings` (failures, or notes for those passed over without that being a failure). `onFound` is
 * told, before the first namespace, how many the walk found (some may vanish before their turn).
 */
export function* targetsOf(
  selection: NamespaceSelection,
  findings: WalkFindings,
  onFound?: (total: number) => void,
): Generator<Target> {
  const { netns: selector } = selection;
  if (selector === "all") {
    yield* allTargets(selection, findings, onFound);
    return;
  }
  onFound?.(1);
  if (selector === undefined) {
    yield OWN;
    return;
  }
  const netns = typeof selector === "string" ? fromLabel(selector) : selector.dup();
  try {
    if (isOwn(netns)) {
      yield OWN;
      return;
    }
    const ref = netns.ref;
    // A name or path the caller gave is what they call it; a handle's ref says what it is.
    if (typeof selector === "string") ref.label = selector;
    yield { netns, ref, label: ref.label };
  } finally {
    netns.close();
  }
}

/** Whether `netns` is the calling thread's own namespace: visiting it needs no move. */
function isOwn(netns: NetNS): boolean {
  threadNetns.assertUsable();
  using own = current();
  return netns.equals(own);
}

function* allTargets(
  selection: NamespaceSelection,
  findings: WalkFindings,
  onFound: ((total: number) => void) | undefined,
): Generator<Target> {
  const found = walkNetns({
    netnsDirs: selection.netnsDirs,
    discover: selection.discover ?? true,
    host: "first",
  });
  let failures = 0;
  let notes = 0;
  const report = () => {
    for (; failures < found.failures.length; failures++) findings.failures.push(found.failures[failures]!);
    for (; notes < found.notes.length; notes++) findings.notes.push(found.notes[notes]!);
  };
  let told = false;
  for (const entry of found) {
    if (!told && found.found !== undefined) onFound?.(found.found);
    told = true;
    report();
    yield entry.host ? OWN : { netns: entry.netns, ref: entry.ref, label: entry.ref.label };
  }
  report();
}

/**
 * The namespaces `selection` visits, as plain data in visiting order (undefined: the caller's own),
 * with what the walk met: what a caller sends to threads that each visit a share of them
 * (targetsOfRefs), visiting each in the walk's order as one thread would.
 */
export function listTargets(selection: NamespaceSelection, findings: WalkFindings): (NetnsRef | undefined)[] {
  const out: (NetnsRef | undefined)[] = [];
  for (const target of targetsOf(selection, findings)) out.push(target.ref && { ...target.ref });
  return out;
}

/**
 * The targets of refs listTargets gave, each reopened while its loop step lasts (undefined: the
 * caller's own). One that cannot be reopened any more is passed over: it vanished (a note in
 * `findings`), or failed (a failure there).
 */
export function* targetsOfRefs(
  refs: readonly (NetnsRef | undefined)[],
  findings: WalkFindings,
): Generator<Target> {
  for (const ref of refs) {
    if (ref === undefined) {
      yield OWN;
      continue;
    }
    let netns: NetNS;
    try {
      netns = reopenNetns(ref);
    } catch (error) {
      if (!(error instanceof NetnsError) || isFatalNetnsError(error)) throw error;
      recordNetnsError(error, ref.label, findings.failures, findings.notes);
      continue;
    }
    try {
      yield { netns, ref, label: ref.label };
    } finally {
      netns.close();
    }
  }
}
