/**
 * Which processes hold which sockets, found as ss -p finds them: every /proc/PID/fd/N that links to
 * "socket:[INODE]". Socket inodes are unique across namespaces, so one scan serves them all.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { type PodOfProcess, podsOfCgroupFile } from "../netns/index.js";

/** One process holding a socket, through one of its descriptors. */
export interface SocketOwner {
  pid: number;
  /** The process name (/proc/PID/comm); with `threads`, the thread's (/proc/PID/task/TID/comm). */
  command: string;
  fd: number;
  /** With `threads`: the thread holding the descriptor (ss -T). */
  tid?: number;
  /** With `pods`: the Kubernetes pod and container the process runs in, when its cgroup names one. */
  pod?: PodOfProcess;
}

/** Options for findSocketOwners. */
export interface SocketOwnerOptions {
  /** One owner per thread, as ss -T: every /proc/PID/task/TID/fd is read. Default false. */
  threads?: boolean;
  /**
   * Also tell each owner's pod and container, from /proc/PID/cgroup as the kubelet lays cgroups
   * out (cgroup v1 or v2, the cgroupfs or systemd driver). Default false.
   */
  pods?: boolean;
  /**
   * Look at these processes only, instead of every one in the proc root: a caller that must not
   * block its thread for long scans a few at a time.
   */
  pids?: Iterable<number>;
}

/**
 * Scan /proc for the owners of the sockets whose inodes are in `wanted` (all sockets when omitted).
 * Processes that exit during the scan, or whose fds this process may not read, are skipped: like
 * ss -p, an unprivileged caller sees only its own processes.
 */
export function findSocketOwners(
  wanted?: ReadonlySet<number>,
  procRoot = "/proc",
  options: SocketOwnerOptions = {},
): Map<number, SocketOwner[]> {
  const owners = new Map<number, SocketOwner[]>();
  for (const entry of options.pids ?? safeReaddir(procRoot)) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const base = `${procRoot}/${pid}`;
    const tasks = options.threads
      ? safeReaddir(`${base}/task`)
          .map(Number)
          .filter((t) => t > 0)
      : [0];
    for (const tid of tasks) {
      const dir = tid === 0 ? base : `${base}/task/${tid}`;
      let command: string | undefined;
      let pod: PodOfProcess | undefined;
      let podRead = !options.pods;
      for (const fdName of safeReaddir(`${dir}/fd`)) {
        const inode = socketInode(`${dir}/fd/${fdName}`);
        if (inode === undefined || (wanted && !wanted.has(inode))) continue;
        command ??= readComm(dir);
        if (!podRead) [pod, podRead] = [readPod(base), true];
        const owner: SocketOwner =
          tid === 0 ? { pid, command, fd: Number(fdName) } : { pid, command, fd: Number(fdName), tid };
        if (pod) owner.pod = pod;
        const list = owners.get(inode) ?? [];
        list.push(owner);
        owners.set(inode, list);
      }
    }
  }
  return owners;
}

function socketInode(path: string): number | undefined {
  let target: string;
  try {
    target = readlinkSync(path);
  } catch {
    return undefined;
  }
  if (!target.startsWith("socket:[")) return undefined;
  return Number(target.slice(8, -1));
}

function readComm(dir: string): string {
  try {
    const text = readFileSync(`${dir}/comm`, "utf8");
    // The kernel ends the name with a newline; whatever the name itself holds is kept.
    return text.endsWith("\n") ? text.slice(0, -1) : text;
  } catch {
    return "?";
  }
}

/** The pod of the process at `dir` (/proc/PID), or undefined: in none, exited, or unreadable. */
function readPod(dir: string): PodOfProcess | undefined {
  try {
    return podsOfCgroupFile(readFileSync(`${dir}/cgroup`, "utf8"))[0];
  } catch {
    return undefined;
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
