/**
 * Who is in a namespace, asked from an event loop: the way back from a walk's label to the
 * namespace's identity, and one asynchronous pass over /proc that tells which processes are in
 * which of some namespaces. The walker (walk.ts) is synchronous and opens what it finds, as the
 * engine that enters namespaces must; this only stat()s (never opens) and awaits every file
 * system call, so an event loop that serves requests meanwhile is never held for long.
 */
import type { Stats } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { fsError, type NetnsError, NetnsNotFoundError } from "./errors.js";
import { DEFAULT_NETNS_DIRS } from "./pinned.js";
import { podsOfCgroupFile } from "./pods.js";
import { HOST_NETNS_NAME } from "./walk.js";

/** A namespace's identity: st_dev and st_ino of its nsfs file (as NetNS and NetnsRef carry them). */
export interface NetnsIdentity {
  readonly dev: number;
  readonly ino: number;
}

/** Where procfs is. */
export interface ProcOptions {
  /** The procfs mount. Default "/proc" (tests point it at a tree of their own). */
  procRoot?: string;
}

/** Where a label is looked for. */
export interface LocateOptions extends ProcOptions {
  /** Pin directories, searched in order, as the walk that gave the label did. Default DEFAULT_NETNS_DIRS. */
  netnsDirs?: readonly string[];
}

/** A namespace found from its label, without opening it. */
export interface LocatedNetns extends NetnsIdentity {
  /** The file its identity was read from; undefined for "net:[INO]", which names no file. */
  path: string | undefined;
}

/**
 * locateNetns finds the namespace a walk's label names (walkLabel, and "(host)"): a pinned name,
 * in the first of `netnsDirs` where it is a regular file (as the walk took its first name); "pid:N",
 * /proc/N/ns/net; "(host)", the caller's process's, /proc/self/ns/net; "net:[INO]", the inode on
 * the nsfs device; anything with "/", that path. Resolves undefined when the label leads to no
 * file (the pin was removed, the process exited). A label is no identity: a pid reused by a
 * process elsewhere, or a pin replaced, leads to another namespace than the one labelled then.
 * Rejects with NetnsError when a file cannot be looked at for another reason (EACCES, ELOOP).
 */
export async function locateNetns(
  label: string,
  options: LocateOptions = {},
): Promise<LocatedNetns | undefined> {
  const proc = options.procRoot ?? "/proc";
  const pid = /^pid:(\d+)$/.exec(label)?.[1];
  if (pid !== undefined) return located(label, `${proc}/${pid}/ns/net`);
  if (label === HOST_NETNS_NAME) return located(label, `${proc}/self/ns/net`);
  const ino = /^net:\[(\d+)\]$/.exec(label)?.[1];
  // Every namespace file is on the one nsfs device: the caller's own names it.
  if (ino !== undefined) {
    const host = await located(label, `${proc}/self/ns/net`);
    return host && { dev: host.dev, ino: Number(ino), path: undefined };
  }
  if (label.includes("/")) return located(label, label);
  for (const dir of options.netnsDirs ?? DEFAULT_NETNS_DIRS) {
    // Only a regular file can be a namespace file: the walk passed over anything else.
    const found = await located(label, `${dir}/${label}`, (st) => st.isFile());
    if (found) return found;
  }
  return undefined;
}

/**
 * The identity of the file at `path`, or undefined when there is none (ENOENT, ENOTDIR, ESRCH) or
 * it is not what `accept` takes.
 */
async function located(
  label: string,
  path: string,
  accept: (st: Stats) => boolean = () => true,
): Promise<LocatedNetns | undefined> {
  const st = await statOrGone(path, (err) => fsError(label, `cannot look at ${path}`, err));
  return st && accept(st) ? { dev: st.dev, ino: st.ino, path } : undefined;
}

/** stat(path), undefined when nothing is there any more; any other failure is `failure(err)`, thrown. */
async function statOrGone(path: string, failure: (err: unknown) => NetnsError): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (err) {
    // ENOTDIR: a pin directory that is a file, or a /proc entry replaced meanwhile: nothing there.
    if ((err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    const e = failure(err);
    if (e instanceof NetnsNotFoundError) return undefined;
    throw e;
  }
}

/** What a process scan found. */
export interface ProcessScan {
  /** Per namespace asked, index-aligned: the processes whose main thread is in it, ascending. */
  pids: number[][];
  /**
   * Processes that could not be looked at (EACCES on another user's without CAP_SYS_PTRACE, ...):
   * each may be in a namespace asked. Those that exited during the scan are not counted.
   */
  unreadable: number;
  /**
   * With `pods`: per namespace asked, index-aligned, the UIDs of the Kubernetes pods its processes
   * run in (from /proc/PID/cgroup, as the kubelet lays cgroups out), sorted, each once. A process
   * that exits before its cgroup is read, or whose cgroup cannot be read, names none.
   */
  pods?: string[][];
}

/** Options of a process scan. */
export interface ProcessScanOptions extends ProcOptions {
  /**
   * How many stat() calls are in flight at once. Default 16: libuv's file system pool has 4
   * threads by default, so more only queues, and every other file system user waits behind them.
   */
  concurrency?: number;
  /** Also read the pods of the processes found (ProcessScan.pods). Default false. */
  pods?: boolean;
}

/**
 * netnsProcesses finds the processes in each of `namespaces`, in one pass over /proc for all of
 * them: it stat()s /proc/PID/ns/net of every process (the main thread's namespace; never opens it)
 * and compares (st_dev, st_ino). Every call is awaited, so the event loop runs between them.
 * Processes that exit meanwhile are passed over; those that cannot be looked at are counted.
 * Rejects with NetnsError only when /proc itself cannot be listed.
 */
export async function netnsProcesses(
  namespaces: readonly NetnsIdentity[],
  options: ProcessScanOptions = {},
): Promise<ProcessScan> {
  const proc = options.procRoot ?? "/proc";
  const scan: ProcessScan = { pids: namespaces.map(() => []), unreadable: 0 };
  if (namespaces.length === 0) return scan;
  // One list per identity, shared by every index that asks for it (one namespace may be asked twice).
  const index = new Map<string, number[]>();
  namespaces.forEach((ns, i) => {
    const key = `${ns.dev}:${ns.ino}`;
    scan.pids[i] = index.get(key) ?? scan.pids[i]!;
    index.set(key, scan.pids[i]!);
  });
  const pids = await processIds(proc);
  await eachLimited(pids, options.concurrency ?? 16, async (pid) => {
    const path = `${proc}/${pid}/ns/net`;
    let st: Stats | undefined;
    try {
      st = await statOrGone(path, (err) => fsError(path, "cannot look at", err));
    } catch {
      scan.unreadable++;
      return;
    }
    if (st) index.get(`${st.dev}:${st.ino}`)?.push(pid);
  });
  for (const list of index.values()) list.sort((a, b) => a - b);
  if (options.pods) {
    const pods = new Map<number[], string[]>();
    for (const list of index.values()) pods.set(list, await podsOf(list, proc, options.concurrency ?? 16));
    scan.pods = scan.pids.map((list) => pods.get(list)!);
  }
  return scan;
}

/** The pod UIDs of `pids`' cgroups, sorted, each once. */
async function podsOf(pids: readonly number[], proc: string, concurrency: number): Promise<string[]> {
  const uids = new Set<string>();
  await eachLimited(pids, concurrency, async (pid) => {
    try {
      for (const pod of podsOfCgroupFile(await readFile(`${proc}/${pid}/cgroup`, "utf8"))) uids.add(pod.uid);
    } catch {
      // Exited since the scan (ENOENT, ESRCH) or unreadable: nothing to tell of it.
    }
  });
  return [...uids].sort();
}

/** The numeric entries of the procfs at `proc`, ascending. */
async function processIds(proc: string): Promise<number[]> {
  try {
    const entries = await readdir(proc);
    return entries
      .filter((e) => /^\d+$/.test(e))
      .map(Number)
      .sort((a, b) => a - b);
  } catch (err) {
    throw fsError(proc, "cannot list processes", err);
  }
}

/** Run `fn` over `items` with at most `limit` calls pending at once. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}
