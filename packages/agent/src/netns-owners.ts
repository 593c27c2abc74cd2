/**
 * Whose sockets a batch destroyed: for each namespace a batch report names, where it is and the
 * Kubernetes pods of the processes in it, read from the node alone (/proc/PID/cgroup, where the
 * kubelet's cgroup layout names the pod's UID: sockdiag's netnsProcesses reads it) — no API call,
 * so no extra permission.
 */
import { locateNetns, netnsProcesses } from "sockdiag";
import { DEFAULT_NETNS_DIRS } from "./options.js";

/** One namespace of a batch, as an operator is told about it. */
export interface NetnsOwners {
  /**
   * The file it was found through now: its pin, /proc/PID/ns/net for "pid:N", /proc/self/ns/net
   * for "(host)". Undefined when the label leads nowhere any more (pin removed, process exited)
   * or names no file ("net:[INO]").
   */
  path?: string;
  /** The pod UIDs of the processes in it, sorted, each once; empty when none runs in a pod. */
  pods: string[];
}

/** Where to look. */
export interface NetnsOwnersOptions {
  /** The procfs mount. Default "/proc" (tests give a tree of their own). */
  procRoot?: string;
  /**
   * The pin directories the batch's terminator was given, in the same order (a pinned
   * namespace's label is its name in the first of them). Default DEFAULT_NETNS_DIRS; a
   * directory that does not exist holds nothing.
   */
  netnsDirs?: readonly string[];
}

/**
 * netnsOwners tells, for each namespace label of a batch report (BatchNamespaceResult.netns:
 * a pin name, "pid:N", "(host)"), its path and the pods of the processes in it. It looks each
 * label up, then scans /proc once for all of them (every call awaited: the event loop runs
 * between them) and reads the cgroup of the processes found. Processes that exit meanwhile, or
 * cannot be read, are passed over: the answer is what could be seen. A label is looked up after
 * the batch, so a pid reused since then by a process elsewhere names that one's namespace.
 * Every label asked is a key of the answer.
 */
export async function netnsOwners(
  namespaces: readonly string[],
  options: NetnsOwnersOptions = {},
): Promise<Map<string, NetnsOwners>> {
  const labels = [...new Set(namespaces)];
  const netnsDirs = options.netnsDirs ?? DEFAULT_NETNS_DIRS;
  const found = await Promise.all(
    labels.map((label) =>
      // A label that cannot be looked at (EACCES) is told as one that leads nowhere.
      locateNetns(label, { netnsDirs, procRoot: options.procRoot }).catch(() => undefined),
    ),
  );
  const located = labels.flatMap((label, i) => (found[i] ? [{ label, netns: found[i] }] : []));
  const scan = await netnsProcesses(
    located.map((l) => l.netns),
    { procRoot: options.procRoot, pods: true },
  );
  const owners = new Map<string, NetnsOwners>(labels.map((label) => [label, { pods: [] }]));
  for (const [i, { label, netns }] of located.entries()) {
    const entry: NetnsOwners = { pods: scan.pods?.[i] ?? [] };
    if (netns.path !== undefined) entry.path = netns.path;
    owners.set(label, entry);
  }
  return owners;
}
