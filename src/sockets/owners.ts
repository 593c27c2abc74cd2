/**
 * Which processes hold which sockets, found as ss -p finds them: every /proc/PID/fd/N that links to
 * "socket:[INODE]". Socket inodes are unique across namespaces, so one scan serves them all.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One process holding a socket, through one of its descriptors. */
export interface SocketOwner {
  pid: number;
  /** The process name (/proc/PID/comm). */
  command: string;
  fd: number;
}

/**
 * Scan /proc for the owners of the sockets whose inodes are in `wanted` (all sockets when omitted).
 * Processes that exit during the scan, or whose fds this process may not read, are skipped: like
 * ss -p, an unprivileged caller sees only its own processes.
 */
export function findSocketOwners(
  wanted?: ReadonlySet<number>,
  procRoot = "/proc",
): Map<number, SocketOwner[]> {
  const owners = new Map<number, SocketOwner[]>();
  for (const entry of safeReaddir(procRoot)) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const fdDir = `${procRoot}/${pid}/fd`;
    let command: string | undefined;
    for (const fdName of safeReaddir(fdDir)) {
      const inode = socketInode(`${fdDir}/${fdName}`);
      if (inode === undefined || (wanted && !wanted.has(inode))) continue;
      command ??= readComm(procRoot, pid);
      const list = owners.get(inode) ?? [];
      list.push({ pid, command, fd: Number(fdName) });
      owners.set(inode, list);
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

function readComm(procRoot: string, pid: number): string {
  try {
    return readFileSync(`${procRoot}/${pid}/comm`, "utf8").trimEnd();
  } catch {
    return "?";
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
