/**
 * Cgroup paths for --cgroup and -e, as ss prints them: the socket's cgroup id (INET_DIAG_CGROUP_ID)
 * named by its directory under the cgroup2 mount ("/" for the root), else `unreachable:ID` in hex
 * (misc/ss.c cg_id_to_path: a cgroup since removed, or no cgroup2 file system mounted).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";

/**
 * CgroupPaths names cgroup ids. A cgroup2 directory's inode number is its cgroup id (kernfs node
 * id, 64-bit kernels), so one walk of the mount names every live cgroup; ss opens each id by
 * handle instead. The walk runs on the first lookup of an id it has not seen.
 */
export class CgroupPaths {
  private paths: Map<bigint, string> | undefined;
  /** Whether a cgroup2 file system was found (after the first lookup). */
  mounted = true;

  constructor(private readonly mountinfo = "/proc/self/mountinfo") {}

  /** The path of cgroup `id` as ss prints it. */
  path(id: bigint): string {
    if (!this.paths?.has(id)) this.paths = this.walk();
    return this.paths.get(id) ?? `unreachable:${id.toString(16)}`;
  }

  private walk(): Map<bigint, string> {
    const paths = new Map<bigint, string>();
    const root = cgroup2Mount(this.mountinfo);
    this.mounted = root !== undefined;
    if (root === undefined) return paths;
    const visit = (dir: string, path: string): void => {
      try {
        paths.set(statSync(dir, { bigint: true }).ino, path || "/");
        for (const e of readdirSync(dir, { withFileTypes: true }))
          if (e.isDirectory()) visit(`${dir}/${e.name}`, `${path}/${e.name}`);
      } catch {
        // A cgroup removed during the walk: its sockets read as unreachable, as in ss.
      }
    };
    visit(root, "");
    return paths;
  }
}

/** The mount point of the first cgroup2 file system in `mountinfo` (fields: proc(5)). */
export function cgroup2Mount(mountinfo = "/proc/self/mountinfo"): string | undefined {
  let text: string;
  try {
    text = readFileSync(mountinfo, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const [mount, fs] = line.split(" - ");
    if (fs?.split(" ")[0] !== "cgroup2") continue;
    // Octal escapes (\040 for a space) as the kernel writes them.
    return mount!
      .split(" ")[4]!
      .replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  }
  return undefined;
}
