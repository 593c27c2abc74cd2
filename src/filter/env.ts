/**
 * FilterEnv: what compiling a filter needs to know about the place the sockets live in. Interface
 * names, the ephemeral port range and (less often) cgroup paths differ between network namespaces,
 * so the sockets layer passes resolvers bound to the right namespace. Each default answers for the
 * calling thread's own namespace.
 */
import { readFileSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ifNameToIndex } from "../sys/index.js";
import type { DevCond } from "./ast.js";
import { FilterResolveError } from "./errors.js";
import { parseCNumber } from "./prefix.js";

/** FilterEnv supplies the namespace-dependent facts a filter is compiled against. */
export interface FilterEnv {
  /** The ifindex of an interface name, or undefined when there is none. Default: if_nametoindex(3). */
  resolveDevice?(name: string): number | undefined;
  /** The cgroup v2 id of a cgroup path, or undefined when it is not one. Default: {@link resolveCgroupPath}. */
  resolveCgroup?(path: string): bigint | undefined;
  /** net.ipv4.ip_local_port_range, inclusive. Default: read from /proc/sys. */
  ephemeralPorts?: readonly [number, number];
}

/** CGROUP2_SUPER_MAGIC (include/uapi/linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;

/**
 * resolveDevice turns a `dev` word into an ifindex as ss's parse_devcond does: the interface of that
 * name, else the word read as a number. Throws FilterResolveError when it is neither.
 */
export function resolveDevice(node: DevCond, env: FilterEnv): number {
  const lookup = env.resolveDevice ?? defaultDevice;
  const byName = lookup(node.device);
  if (byName !== undefined && byName > 0) return byName;
  const n = parseCNumber(node.device);
  if (n !== undefined && n <= 0xffffffff) return n;
  throw new FilterResolveError("device", node.device, "no interface has that name");
}

/** resolveCgroup turns a `cgroup` path into its id; throws FilterResolveError when it is not a cgroup v2. */
export function resolveCgroup(path: string, env: FilterEnv): bigint {
  const id = (env.resolveCgroup ?? resolveCgroupPath)(path);
  if (id === undefined) throw new FilterResolveError("cgroup", path, "not a cgroup v2 directory");
  return id;
}

/** ephemeralPorts returns the env's range, or this namespace's (ss's fallback 1024-4999 if unreadable). */
export function ephemeralPorts(env: FilterEnv): readonly [number, number] {
  return env.ephemeralPorts ?? readEphemeralPorts();
}

function defaultDevice(name: string): number | undefined {
  // if_nametoindex copies at most IFNAMSIZ bytes; longer or NUL-holding words name no interface.
  if (name.length === 0 || Buffer.byteLength(name) >= 16 || name.includes("\0")) return undefined;
  return ifNameToIndex(name) || undefined;
}

/**
 * readEphemeralPorts reads /proc/sys/net/ipv4/ip_local_port_range (the namespace of the calling thread),
 * falling back to 1024-4999 as ss's is_ephemeral does.
 */
export function readEphemeralPorts(
  path = "/proc/sys/net/ipv4/ip_local_port_range",
): readonly [number, number] {
  try {
    const [lo, hi] = readFileSync(path, "utf8").trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi)) return [lo!, hi!];
  } catch {
    // fall through to ss's default
  }
  return [1024, 4999];
}

/**
 * resolveCgroupPath returns the cgroup v2 id of `path`, as ss's get_cgroup2_id finds it: the path
 * itself if it is on a cgroup2 file system, else the path taken relative to the first cgroup2 mount in
 * /proc/mounts. The id is the directory's inode number (kernfs uses the id as inode on 64-bit kernels).
 * Unlike ss, a path that exists outside cgroup2 is not mistaken for a cgroup, and "/" names the root.
 */
export function resolveCgroupPath(path: string): bigint | undefined {
  const direct = cgroupInode(path);
  if (direct !== undefined) return direct;
  const mount = cgroup2Mount();
  return mount === undefined ? undefined : cgroupInode(join(mount, path));
}

function cgroupInode(path: string): bigint | undefined {
  try {
    if (statfsSync(path, { bigint: true }).type !== BigInt(CGROUP2_SUPER_MAGIC)) return undefined;
    const st = statSync(path, { bigint: true });
    return st.isDirectory() ? st.ino : undefined;
  } catch {
    return undefined;
  }
}

function cgroup2Mount(): string | undefined {
  try {
    for (const line of readFileSync("/proc/mounts", "utf8").split("\n")) {
      const [, dir, type] = line.split(" ");
      if (type === "cgroup2" && dir)
        return dir.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    }
  } catch {
    // no /proc: no cgroup2 mount known
  }
  return undefined;
}
