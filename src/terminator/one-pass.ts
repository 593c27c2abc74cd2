/**
 * The one-pass path of a termination (issue 42): whether a run takes it, and what it found. One
 * pass over every task's open files (bpf/) finds the UDP sockets connected to the run's backends
 * in every namespace at once; then each namespace of the selection is, by what the pass and its
 * counters (read without entering: /proc/PID/net/) say of it:
 *  - "found": entered, and exactly the sockets the pass found there destroyed by tuple and cookie;
 *  - "walk": walked with sock_diag as without the pass — its UDP counters (sockstat's `UDP:
 *    inuse`, sockstat6's `UDP6: inuse`: sockets with a local port) count more sockets than tasks
 *    hold there (so one no task holds: in flight in SCM_RIGHTS, an io_uring fixed file, a
 *    device's kernel socket), a found socket's cookie is unknown, or its counters cannot be read
 *    (read by entering it where no process of it shows them). The counters are read between the
 *    pass and a second look at every task's socket files, and only the held sockets the second
 *    look sees again count as held: each was alive at every moment between its two sightings, so
 *    at the read too. Sockets opened or closed meanwhile therefore cannot make up for one no task
 *    holds (a socket seen in one look only could have lived wholly before or after the read). What
 *    still can: a socket held at both looks that had no local port at the read (disconnected with
 *    AF_UNSPEC and bound again in between), or that moved from IPv6 to IPv4 (IPV6_ADDRFORM);
 *  - "none": no socket to destroy; ruled out altogether when its conntrack count is 0 too.
 * Never less than the walk but for those two: a socket the pass cannot see is in a namespace that
 * is walked.
 */

import { statSync } from "node:fs";
import {
  type FindOptions,
  type FoundSocket,
  type FoundSockets,
  findConnectedSockets,
  type HeldUdp,
  inetSocketOf,
  onePassAvailability,
  unavailableBecause,
} from "../bpf/index.js";
import type { InetSocket } from "../diag/socket.js";
import {
  conntrackEntries,
  conntrackEntriesOf,
  HeldSockstat,
  inNetns,
  isFatalNetnsError,
  type NamespaceNote,
  type NetnsRef,
  type SocketCounts,
  type Target,
  targetLabel,
  udpChildHashEntries,
} from "../netns/index.js";
import { AF_INET } from "../sys/index.js";
import { OnePassUnavailableError } from "./errors.js";
import type { BackendName } from "./report.js";

/** Whether terminations take the one pass: where it can run and pays ("auto"), always, or never. */
export type OnePassMode = "auto" | "on" | "off";

export const ONE_PASS_MODES: readonly OnePassMode[] = ["auto", "on", "off"];

/** Why a run walks every namespace instead (each a note of the report). */
export type WalkReason =
  | "off"
  | "privileges"
  | "pid-namespace"
  | "no-btf"
  | "kernel"
  | "verifier"
  /** TCP backends: the pass here covers UDP. */
  | "tcp"
  /** A namespace named alone: nothing to rule out. */
  | "single-namespace"
  /** New namespaces get UDP tables of their own (udp_child_hash_entries): their walks are short. */
  | "table-per-namespace"
  /** The pass failed when run. */
  | "pass-failed"
  /** A test's collaborators stand in for the library's. */
  | "seam";

/** Which path a run took, and why: a report's `onePass`. */
export interface OnePassSummary {
  /** The mode asked for. */
  mode: OnePassMode;
  /** True when the pass ran and the namespaces were chosen by it. */
  used: boolean;
  /** Why it was not used. */
  reason?: WalkReason;
  /** What the reason means here. */
  message: string;
  /** Sockets the pass found, when it ran. */
  found?: number;
}

/** What the pass says of one namespace. */
export interface NamespaceVerdict {
  sockets: "found" | "walk" | "none";
  /** The sockets to destroy there ("found"), as listed sockets of the namespace. */
  found?: InetSocket[];
  /** Whether its conntrack entries are to be looked at (its count is not 0, or unknown). */
  conntrack: boolean;
  /**
   * Its conntrack entries as the plan read them (not 0), for the conntrack step not to count
   * them again; absent where the count is unknown (then the step counts).
   */
  entries?: number;
  /** How it was decided, for people. */
  how: string;
}

/** Where the one pass stands before a run: cached per terminator, asked once. */
export interface OnePassDecision {
  summary: OnePassSummary;
  /** The plan, when the pass ran. */
  plan?: OnePassPlan;
}

/** What a run asks of the one pass's plan, per namespace of its walk. */
export interface NamespacePlan {
  /** The verdict on `target` (the same for every call in a run). */
  verdict(target: Target): NamespaceVerdict;
  /** The note of a namespace ruled out altogether, or undefined when something is to be done there. */
  ruledOut(target: Target): NamespaceNote<string> | undefined;
}

/**
 * The verdicts a plan gave elsewhere (the pool's first worker: sharedPlan), on the namespaces of
 * one share: none is ruled out here (those stayed with the plan), and one the plan did not judge
 * (it vanished meanwhile) is walked.
 */
export class GivenVerdicts implements NamespacePlan {
  private readonly byId = new Map<number, NamespaceVerdict>();
  private readonly own = ownNetnsId();

  constructor(refs: readonly (NetnsRef | undefined)[], verdicts: readonly (NamespaceVerdict | undefined)[]) {
    refs.forEach((ref, i) => {
      const verdict = verdicts[i];
      if (verdict) this.byId.set(ref?.ino ?? this.own, verdict);
    });
  }

  verdict(target: Target): NamespaceVerdict {
    const id = target.netns?.id ?? this.own;
    return (
      this.byId.get(id) ?? { sockets: "walk", conntrack: true, how: "not judged by the one pass: walked" }
    );
  }

  ruledOut(): undefined {
    return undefined;
  }
}

/**
 * Why a run of these circumstances walks every namespace instead of taking the one pass, or
 * undefined when it takes it: what doctor and the agent tell, without running the pass.
 */
export function walkReason(c: OnePassCircumstances): { reason: WalkReason; message: string } | undefined {
  if (c.mode === "off") return { reason: "off", message: "one pass off" };
  if (c.seam) return { reason: "seam", message: "a test's collaborators stand in for the library's" };
  if (c.backends.some((b) => b.protocol !== "udp"))
    return { reason: "tcp", message: "the one pass covers UDP backends: TCP ones are walked with sock_diag" };
  const available = cachedAvailability();
  if (!available.available) return { reason: available.reason, message: available.message };
  if (c.mode !== "auto") return undefined;
  if (!c.all) return { reason: "single-namespace", message: "one namespace named: walked with sock_diag" };
  const child = udpChildHashEntries();
  if (child !== undefined && child > 0)
    return {
      reason: "table-per-namespace",
      message: `net.ipv4.udp_child_hash_entries is ${child}: namespaces have UDP tables of their own, whose walks are shorter than the pass`,
    };
  return undefined;
}

/**
 * Which path terminations of UDP backends over every namespace take here with `mode`, and why:
 * for doctor and the agent's log (the pass is probed, not run).
 */
export function onePassPath(mode: OnePassMode): OnePassSummary {
  const against = walkReason({ mode, backends: [], all: true, seam: false, conntrack: false });
  return against
    ? { mode, used: false, ...against }
    : {
        mode,
        used: true,
        message: "one pass over every task's files, then only the namespaces that need it",
      };
}

/** What decides: the run's and the terminator's circumstances. */
export interface OnePassCircumstances {
  mode: OnePassMode;
  backends: readonly BackendName[];
  /** The selection is "all" (namespaces to rule out). */
  all: boolean;
  /** A test's collaborators are in place. */
  seam: boolean;
  conntrack: boolean;
}

let availability: ReturnType<typeof onePassAvailability> | undefined;

/** onePassAvailability, asked once per process (privileges and the kernel do not change). */
export function cachedAvailability(): ReturnType<typeof onePassAvailability> {
  availability ??= onePassAvailability();
  return availability;
}

/** The pass itself: findConnectedSockets, or a test's stand-in. */
export type FindSockets = (options: FindOptions) => FoundSockets;

/**
 * Whether the run takes the one pass and, when it does, the pass run and its plan. `before`
 * opens the counters of the run's namespaces (countersOf), called just before the pass; they are
 * read after it, and the pass's second look at the held sockets (`seenAgain`) follows. A pass
 * that fails (a verifier refusal, the kernel) is walked instead with the reason, as a probe's
 * would be. Throws OnePassUnavailableError, naming why, when the mode is "on" and the pass
 * cannot run.
 */
export function decideOnePass(
  c: OnePassCircumstances,
  before: () => RunCounters,
  find: FindSockets = findConnectedSockets,
): OnePassDecision {
  const walk = (reason: WalkReason, message: string): OnePassDecision => {
    if (c.mode === "on") throw new OnePassUnavailableError(reason, message);
    return { summary: { mode: c.mode, used: false, reason, message } };
  };
  const against = walkReason(c);
  if (against) return walk(against.reason, against.message);
  const counters = before();
  let pass: FoundSockets;
  let heldAgain: ReadonlyMap<number, HeldUdp>;
  try {
    pass = find({ backends: c.backends, protocols: ["udp"] });
    readCounters(counters);
    heldAgain = pass.seenAgain();
  } catch (err) {
    closeCounters(counters);
    const failed = failureOf(err);
    return walk(failed.reason, failed.message);
  }
  return {
    summary: {
      mode: c.mode,
      used: true,
      message: `one pass: ${pass.sockets.length} sockets connected to the backends`,
      found: pass.sockets.length,
    },
    plan: new OnePassPlan(pass.sockets, heldAgain, counters, c.conntrack),
  };
}

/** Why a pass that was run failed: the probe's reasons where the error is of their kinds. */
function failureOf(err: unknown): { reason: WalkReason; message: string } {
  const probed = unavailableBecause(err);
  if (probed && !probed.available)
    return { reason: probed.reason, message: `the one pass failed: ${probed.message}` };
  return { reason: "pass-failed", message: `the one pass failed: ${(err as Error).message}` };
}

/**
 * A namespace's counters' files, opened before the pass (in the run's one listing of its
 * namespaces), and what they counted between the two passes (readCounters).
 */
export interface NamespaceCounters {
  readonly files: HeldSockstat;
  counts?: SocketCounts;
}

/**
 * Each namespace's counters, or why they cannot be read, by its id. Their files stay open until
 * the plan judges the namespace or is disposed (closeCounters where no plan is made): its
 * conntrack count is read from them at its turn.
 */
export type RunCounters = Map<number, NamespaceCounters | Error>;

/**
 * The counters of `targets` (the run's namespaces, walked once before the pass), opened, by
 * namespace id. Throws only a fatal namespace error (a failed return to the caller's own), with
 * nothing left open.
 */
export function countersOf(targets: Iterable<Target>, conntrack: boolean): RunCounters {
  const own = ownNetnsId();
  const out: RunCounters = new Map();
  try {
    for (const target of targets) {
      const id = target.netns?.id ?? own;
      if (out.has(id)) continue;
      try {
        out.set(id, { files: countersFiles(target, processOf(target, id), conntrack) });
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        out.set(id, err instanceof Error ? err : new Error(String(err)));
      }
    }
  } catch (err) {
    closeCounters(out);
    throw err;
  }
  return out;
}

/**
 * Reads the counters between the two passes: every socket the second pass sees again was alive
 * at its namespace's read. One that cannot be read becomes its error.
 */
export function readCounters(counters: RunCounters): void {
  for (const [id, c] of counters) {
    if (c instanceof Error) continue;
    try {
      c.counts = c.files.read();
    } catch (err) {
      c.files.close();
      counters.set(id, err instanceof Error ? err : new Error(String(err)));
    }
  }
}

/** Close the files countersOf kept open. */
export function closeCounters(counters: RunCounters): void {
  for (const c of counters.values()) if (!(c instanceof Error)) c.files.close();
}

/**
 * The namespace's counters' files, opened through `pid`'s /proc/PID/net/ when known, else by
 * entering it.
 */
function countersFiles(target: Target, pid: number | undefined, conntrack: boolean): HeldSockstat {
  const options = { conntrack };
  return pid === undefined
    ? inNetns(target.netns, () => new HeldSockstat(undefined, options))
    : new HeldSockstat(pid, options);
}

/** The calling thread's network namespace's id. */
function ownNetnsId(): number {
  return statSync("/proc/thread-self/ns/net").ino;
}

/**
 * What the pass found, by namespace, and each namespace's verdict (asked once per namespace). It
 * owns the counters' files (RunCounters): each closed once its namespace is judged, the rest
 * when the plan is disposed.
 */
export class OnePassPlan implements NamespacePlan, Disposable {
  private readonly byNetns = new Map<number, FoundSocket[]>();
  private readonly verdicts = new Map<number, NamespaceVerdict>();
  private readonly own = ownNetnsId();

  constructor(
    found: readonly FoundSocket[],
    /**
     * The UDP sockets tasks hold, by namespace: those the pass counted and its second look saw
     * again (FoundSockets.seenAgain).
     */
    private readonly held: ReadonlyMap<number, HeldUdp>,
    /** The namespaces' counters, read between the pass and its second look (readCounters). */
    private readonly counters: RunCounters,
    private readonly conntrack: boolean,
  ) {
    for (const s of found) {
      const list = this.byNetns.get(s.netns);
      if (list) list.push(s);
      else this.byNetns.set(s.netns, [s]);
    }
  }

  /** The verdict on `target` (the same for every call in a run). */
  verdict(target: Target): NamespaceVerdict {
    const id = target.netns?.id ?? this.own;
    let verdict = this.verdicts.get(id);
    if (!verdict) {
      verdict = this.decide(target, id);
      this.verdicts.set(id, verdict);
    }
    return verdict;
  }

  /** The note of a namespace ruled out altogether, or undefined when something is to be done there. */
  ruledOut(target: Target): NamespaceNote<string> | undefined {
    const v = this.verdict(target);
    if (v.sockets !== "none" || v.conntrack) return undefined;
    return { netns: targetLabel(target), skipped: "one-pass", message: v.how };
  }

  /** Close the counters' files of the namespaces not judged. */
  [Symbol.dispose](): void {
    closeCounters(this.counters);
  }

  private decide(target: Target, id: number): NamespaceVerdict {
    const found = this.byNetns.get(id) ?? [];
    const sockets = (how: string) => ({
      sockets: "found" as const,
      found: found.map((s) => inetSocketOf(s, target.ref)),
      how,
    });
    const counters = this.counters.get(id);
    const files = counters instanceof Error ? undefined : counters?.files;
    let count: ConntrackCount | undefined;
    try {
      count = this.conntrack ? conntrackCount(target, id, files) : undefined;
    } finally {
      files?.close();
    }
    // No conntrack module (entries undefined) holds no entry either; a count that cannot be read may.
    const conntrack = count !== undefined && ("unknown" in count || (count.entries ?? 0) !== 0);
    const entries = count && "entries" in count && count.entries ? { entries: count.entries } : {};
    const unread =
      count && "unknown" in count ? `; its conntrack count cannot be read (${count.unknown}): looked at` : "";
    const walk = (how: string): NamespaceVerdict => ({
      sockets: "walk",
      conntrack,
      ...entries,
      how: how + unread,
    });
    if (found.some((s) => s.cookie === 0n)) return walk("a found socket's cookie is unknown: walked");
    // Every namespace a run judges was listed and read: undefined only for a plan made by hand.
    const counts = counters instanceof Error ? undefined : counters?.counts;
    if (counts === undefined)
      return walk(
        `its counters cannot be read (${counters instanceof Error ? counters.message : "not read between the passes"}): walked`,
      );
    const v4 = found.filter((s) => s.family === AF_INET).length;
    const held = this.held.get(id) ?? { v4: 0, v6: 0 };
    // Read between the pass and its second look: every socket counted in `held` was alive then,
    // so a count above it is a socket no task holds.
    const udp = counts.get("UDP") ?? 0;
    const udp6 = counts.get("UDP6") ?? 0;
    const tally = `UDP ${udp}, UDP6 ${udp6}; tasks hold ${held.v4} and ${held.v6}, the pass found ${v4} and ${found.length - v4}`;
    if (udp > held.v4 || udp6 > held.v6)
      return walk(`its UDP counters exceed what tasks hold (${tally}): walked`);
    if (found.length > 0)
      return {
        ...sockets(`${found.length} found by the one pass (${tally})${unread}`),
        conntrack,
        ...entries,
      };
    return {
      sockets: "none",
      conntrack,
      ...entries,
      how: `ruled out by the one pass: no socket connected to the backends, and no UDP socket no task holds (${tally})${
        this.conntrack && !conntrack ? "; no conntrack entry" : ""
      }${unread}`,
    };
  }
}

/**
 * A process in `target` whose /proc/PID/net/ shows its counters: its handle's, while it is still
 * there (the caller's own for the host). Undefined when none is known.
 */
function processOf(target: Target, id: number): number | undefined {
  const pid = target.netns === undefined ? process.pid : target.netns.pid;
  if (pid === undefined) return undefined;
  try {
    return statSync(`/proc/${pid}/ns/net`).ino === id ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A namespace's conntrack entries as the plan read them (undefined: no nf_conntrack), or why not. */
type ConntrackCount = { entries: number | undefined } | { unknown: string };

/**
 * The namespace's conntrack entries, from the file its counters keep open (`held`), else read
 * through its process or by entering it — also where that file was absent when the counters were
 * opened: nf_conntrack may have been loaded since. Unknown where the count cannot be read (then
 * the conntrack step looks, as without the pass).
 */
function conntrackCount(target: Target, id: number, held: HeldSockstat | undefined): ConntrackCount {
  try {
    const kept = held?.conntrackEntries();
    if (kept !== undefined) return { entries: kept };
    const pid = processOf(target, id);
    return { entries: pid === undefined ? inNetns(target.netns, conntrackEntries) : conntrackEntriesOf(pid) };
  } catch (err) {
    if (isFatalNetnsError(err)) throw err;
    return { unknown: (err as Error).message };
  }
}
