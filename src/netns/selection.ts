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
 * A walk's targets listed at once, each handle kept (a dup) until disposed: for a run that goes
 * over the same namespaces twice — the one pass reads each one's counters before it and visits
 * them after — without listing them twice. `replay` walks them again as the walk went: what it met,
 * its count, the targets in order, then what it threw, if it did (a fatal namespace error is thrown
 * at once). A handle that cannot be kept (out of descriptors) is that namespace's failure.
 */
export class KeptTargets implements Disposable {
  readonly targets: Target[] = [];
  readonly #findings: WalkFindings = { failures: [], notes: [] };
  #found: number | undefined;
  #broken: { error: unknown } | undefined;

  constructor(walk: (findings: WalkFindings, onFound: (total: number) => void) => Iterable<Target>) {
    try {
      for (const target of walk(this.#findings, (total) => {
        this.#found = total;
      }))
        this.#keep(target);
    } catch (error) {
      if (isFatalNetnsError(error)) {
        this[Symbol.dispose]();
        throw error;
      }
      this.#broken = { error };
    }
  }

  *replay(findings: WalkFindings, onFound?: (total: number) => void): Generator<Target> {
    findings.failures.push(...this.#findings.failures);
    findings.notes.push(...this.#findings.notes);
    if (this.#found !== undefined) onFound?.(this.#found);
    yield* this.targets;
    if (this.#broken) throw this.#broken.error;
  }

  [Symbol.dispose](): void {
    for (const target of this.targets.splice(0)) target.netns?.close();
  }

  #keep(target: Target): void {
    if (target.netns === undefined) {
      this.targets.push(target);
      return;
    }
    try {
      this.targets.push({ ...target, netns: target.netns.dup() });
    } catch (error) {
      if (!(error instanceof NetnsError) || isFatalNetnsError(error)) throw error;
      recordNetnsError(error, targetLabel(target), this.#findings.failures, this.#findings.notes);
    }
  }
}

/**
 * The targets of refs (a walk's, as plain data: what a caller sends to threads that each visit a
 * share of them), each reopened while its loop step lasts (undefined: the caller's own). One
 * that cannot be reopened any more is passed over: it vanished (a note in
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
