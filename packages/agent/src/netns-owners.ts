/**
 * Whose sockets a batch destroyed: for each namespace a batch report names, where it is and the
 * Kubernetes pods of the processes in it, read from the node alone (/proc/PID/cgroup, where the
 * kubelet's cgroup layout names the pod's UID) — no API call, so no extra permission.
 *
 * The kubelet (pkg/kubelet/cm: cgroup_manager_linux.go, pod_container_manager_linux.go) puts a
 * pod's containers under "pod" + UID, beneath the cgroup root's "kubepods" and the QoS class
 * ("burstable", "besteffort"; Guaranteed pods sit directly under kubepods):
 * - cgroupfs driver: /kubepods/burstable/pod<UID>/<container id>
 * - systemd driver: every level a slice whose name carries its parents', "-" in a part escaped
 *   as "_": /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID_>.slice/<scope>;
 *   a cgroup root such as kind's /kubelet prefixes each name ("kubelet-kubepods-...").
 */
import { readFile } from "node:fs/promises";
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
    { procRoot: options.procRoot },
  );
  const owners = new Map<string, NetnsOwners>(labels.map((label) => [label, { pods: [] }]));
  for (const [i, { label, netns }] of located.entries()) {
    const entry: NetnsOwners = { pods: await podsOf(scan.pids[i]!, options.procRoot ?? "/proc") };
    if (netns.path !== undefined) entry.path = netns.path;
    owners.set(label, entry);
  }
  return owners;
}

/** The pod UIDs of `pids`' cgroups, sorted, each once. */
async function podsOf(pids: readonly number[], proc: string): Promise<string[]> {
  const pods = new Set<string>();
  for (const uids of (await podsOfProcesses(pids, proc)).values()) for (const uid of uids) pods.add(uid);
  return [...pods].sort();
}

/**
 * The pod UIDs of each of `pids`' cgroups (a process in no pod, or gone, is absent). Reads run 16
 * at a time: one after another, a host namespace's thousands of processes take a second; more at
 * once only queue in libuv's file system pool (4 threads by default), ahead of the agent's other
 * file work.
 */
export async function podsOfProcesses(
  pids: readonly number[],
  proc = "/proc",
): Promise<Map<number, string[]>> {
  const pods = new Map<number, string[]>();
  let next = 0;
  const lane = async () => {
    while (next < pids.length) {
      const pid = pids[next++]!;
      try {
        const uids = podUidsOfCgroup(await readFile(`${proc}/${pid}/cgroup`, "utf8"));
        if (uids.length > 0) pods.set(pid, uids);
      } catch {
        // Exited since the scan (ENOENT, ESRCH) or unreadable: nothing to tell of it.
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, pids.length) }, lane));
  return pods;
}

/**
 * podUidsOfCgroup reads the pod UIDs of a /proc/PID/cgroup text: one line per hierarchy,
 * "ID:CONTROLLERS:PATH" (cgroup v1; v2's one line is "0::PATH"), each path read by
 * podUidOfCgroupPath. Sorted, each once (v1 repeats the path per controller).
 */
export function podUidsOfCgroup(text: string): string[] {
  const uids = new Set<string>();
  for (const line of text.split("\n")) {
    // The path is everything after the second ":" (a path may hold ":" itself).
    const first = line.indexOf(":");
    const second = first < 0 ? -1 : line.indexOf(":", first + 1);
    if (second < 0) continue;
    const uid = podUidOfCgroupPath(line.slice(second + 1));
    if (uid) uids.add(uid);
  }
  return [...uids].sort();
}

/** A pod UID: a UUID as the API server makes one, its groups joined by `dash`, or a static pod's hash in hex. */
const uidPattern = (dash: string) =>
  `[0-9a-f]{8}${dash}[0-9a-f]{4}${dash}[0-9a-f]{4}${dash}[0-9a-f]{4}${dash}[0-9a-f]{12}|[0-9a-f]{32}`;
const QOS = new Set(["burstable", "besteffort"]);
const CGROUPFS_POD = new RegExp(`^pod(${uidPattern("-")})$`);
// The systemd driver writes every "-" of a name part as "_"; a slice's name spells its whole
// chain: [root prefix-]kubepods[-qos]-pod<UID with "_">.slice.
const SYSTEMD_POD = new RegExp(
  `^(?:[^/]+-)?kubepods(?:-burstable|-besteffort)?-pod(${uidPattern("_")})\\.slice$`,
);

/**
 * podUidOfCgroupPath finds the pod UID in a cgroup path of the kubelet's layout, whatever comes
 * before kubepods (a cgroup root, a node inside a container: "/docker/<id>/kubepods/..."), or
 * undefined for any other path (a host process, a container outside Kubernetes). A systemd pod
 * slice is known by its name alone, which spells its chain; a cgroupfs "pod<UID>" must sit under
 * "kubepods" or its QoS level. Read from inside another cgroup namespace (the agent's own pod
 * has one with cgroup v2), a path outside it begins with "/..": the levels it shares with the
 * reader are not shown, so a cgroupfs pod may then follow the ".." directly.
 */
export function podUidOfCgroupPath(path: string): string | undefined {
  const parts = path.split("/").filter((p) => p !== "");
  for (const [i, part] of parts.entries()) {
    const systemd = SYSTEMD_POD.exec(part)?.[1];
    if (systemd) return systemd.replaceAll("_", "-");
    const cgroupfs = CGROUPFS_POD.exec(part)?.[1];
    if (cgroupfs && underKubepods(parts, i)) return cgroupfs;
  }
  return undefined;
}

/** Whether parts[i] sits under "kubepods" (or, read from another cgroup namespace, ".."), or its QoS level. */
function underKubepods(parts: readonly string[], i: number): boolean {
  const root = (p: string | undefined) => p === "kubepods" || p === "..";
  const parent = parts[i - 1];
  return root(parent) || (parent !== undefined && QOS.has(parent) && root(parts[i - 2]));
}
