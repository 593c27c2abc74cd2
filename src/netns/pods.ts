/**
 * The Kubernetes pod (and container) a process runs in, from its cgroup, read from the node alone:
 * no API call. The kubelet (pkg/kubelet/cm: cgroup_manager_linux.go, pod_container_manager_linux.go)
 * puts a pod's containers under "pod" + UID, beneath the cgroup root's "kubepods" and the QoS class
 * ("burstable", "besteffort"; Guaranteed pods sit directly under kubepods):
 * - cgroupfs driver: /kubepods/burstable/pod<UID>/<container id> (CRI-O: crio-<container id>)
 * - systemd driver: every level a slice whose name carries its parents', "-" in a part escaped
 *   as "_": /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID_>.slice/<scope>,
 *   the scope named by the runtime: cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope;
 *   a cgroup root such as kind's /kubelet prefixes each name ("kubelet-kubepods-...").
 */

/** A pod as a process's cgroup names it. */
export interface PodOfProcess {
  /** The pod's UID (metadata.uid; a static pod's is the hex of a hash). */
  uid: string;
  /** The container's id (64 hex digits, as the runtime gives it), when the cgroup is a container's. */
  container?: string;
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
// The level below the pod's: the id alone, or after the runtime's prefix (cri-containerd-, crio-,
// docker-), a systemd scope ending in ".scope". conmon's scope (crio-conmon-<id>) is not the container.
const CONTAINER = /^(?:(?!crio-conmon-)[a-z][a-z-]*-)?([0-9a-f]{64})(?:\.scope)?$/;

/**
 * podOfCgroupPath finds the pod (and the container, one level below it) in a cgroup path of the
 * kubelet's layout, whatever comes before kubepods (a cgroup root, a node inside a container:
 * "/docker/<id>/kubepods/..."), or undefined for any other path (a host process, a container
 * outside Kubernetes). A systemd pod slice is known by its name alone, which spells its chain; a
 * cgroupfs "pod<UID>" must sit under "kubepods" or its QoS level. Read from inside another cgroup
 * namespace (a pod's own, with cgroup v2), a path outside it begins with "/..": the levels it
 * shares with the reader are not shown, so a cgroupfs pod may then follow the ".." directly.
 */
export function podOfCgroupPath(path: string): PodOfProcess | undefined {
  const parts = path.split("/").filter((p) => p !== "");
  for (const [i, part] of parts.entries()) {
    const systemd = SYSTEMD_POD.exec(part)?.[1];
    const cgroupfs = systemd ? undefined : CGROUPFS_POD.exec(part)?.[1];
    const uid = systemd?.replaceAll("_", "-") ?? (cgroupfs && underKubepods(parts, i) ? cgroupfs : undefined);
    if (uid === undefined) continue;
    const container = CONTAINER.exec(parts[i + 1] ?? "")?.[1];
    return container ? { uid, container } : { uid };
  }
  return undefined;
}

/** Whether parts[i] sits under "kubepods" (or, read from another cgroup namespace, ".."), or its QoS level. */
function underKubepods(parts: readonly string[], i: number): boolean {
  const root = (p: string | undefined) => p === "kubepods" || p === "..";
  const parent = parts[i - 1];
  return root(parent) || (parent !== undefined && QOS.has(parent) && root(parts[i - 2]));
}

/**
 * podsOfCgroupFile reads the pods of a /proc/PID/cgroup text: one line per hierarchy,
 * "ID:CONTROLLERS:PATH" (cgroup v1; v2's one line is "0::PATH"), each path read by
 * podOfCgroupPath. Each pod and container once (v1 repeats the path per controller), sorted.
 */
export function podsOfCgroupFile(text: string): PodOfProcess[] {
  const found = new Map<string, PodOfProcess>();
  for (const line of text.split("\n")) {
    // The path is everything after the second ":" (a path may hold ":" itself).
    const first = line.indexOf(":");
    const second = first < 0 ? -1 : line.indexOf(":", first + 1);
    const pod = second < 0 ? undefined : podOfCgroupPath(line.slice(second + 1));
    if (pod) found.set(`${pod.uid}/${pod.container ?? ""}`, pod);
  }
  // A pod named without its container where another hierarchy names the container adds nothing.
  const placed = new Set([...found.values()].filter((p) => p.container).map((p) => p.uid));
  return [...found.keys()]
    .sort()
    .map((key) => found.get(key)!)
    .filter((p) => p.container || !placed.has(p.uid));
}
