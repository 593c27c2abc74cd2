/**
 * Pod cgroups for tests: a cgroup laid out as the kubelet would (kubepods.slice/...-pod<UID>.slice
 * under cgroup v2, kubepods/<qos>/pod<UID> under v1), made of the levels that do not exist yet,
 * with test processes moved in and back out.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";

/** A cgroup hierarchy mounted at its root: where, and how a process's line in /proc/PID/cgroup reads. */
export interface Hierarchy {
  mount: string;
  /** Whether a line of /proc/PID/cgroup is this hierarchy's. */
  mine: (line: string) => boolean;
}

/** The first hierarchy of `fstype` (with `option` among its super options) mounted at its root. */
export function hierarchy(fstype: "cgroup2" | "cgroup", option?: string): Hierarchy | undefined {
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const [left, right] = line.split(" - ");
    const fields = left?.split(" ") ?? [];
    const [type, , superOptions = ""] = right?.split(" ") ?? [];
    if (type !== fstype || fields[3] !== "/" || (option && !superOptions.split(",").includes(option)))
      continue;
    const mount = fields[4]!;
    if (fstype === "cgroup2") return { mount, mine: (l) => l.startsWith("0::") };
    return { mount, mine: (l) => l.split(":")[1]?.split(",").includes(option!) ?? false };
  }
  return undefined;
}

/**
 * The levels this process made, with how many PodCgroups stand on each: pods of one QoS class share
 * their parents (kubepods.slice/kubepods-besteffort.slice), and a parent goes only with its last pod,
 * whatever order the tests remove them in (rmdir of a cgroup that still has children is EBUSY).
 */
const madeHere = new Map<string, number>();

/**
 * A cgroup laid out as the kubelet would, made of the levels that do not exist yet; `remove`
 * moves the processes put in it back where they were and deletes only what was made for it.
 */
export class PodCgroup {
  readonly #made: string[] = [];
  readonly #moved: [number, string][] = [];

  constructor(
    readonly at: Hierarchy,
    readonly path: string,
  ) {}

  /** Make the missing levels; false when this hierarchy may not be written here (EROFS, EACCES, EPERM). */
  make(): boolean {
    let dir = this.at.mount;
    for (const level of this.path.split("/").filter(Boolean)) {
      dir = join(dir, level);
      const users = madeHere.get(dir);
      if (users !== undefined) {
        madeHere.set(dir, users + 1);
        this.#made.push(dir);
        continue;
      }
      if (existsSync(dir)) continue;
      try {
        mkdirSync(dir);
      } catch (err) {
        if (["EROFS", "EACCES", "EPERM"].includes((err as NodeJS.ErrnoException).code ?? "")) return false;
        throw err;
      }
      madeHere.set(dir, 1);
      this.#made.push(dir);
    }
    return true;
  }

  /** Move `pid` in, remembering where it was. */
  enter(pid: number): void {
    const line = readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n").find(this.at.mine);
    this.#moved.push([pid, line!.slice(line!.indexOf(":", line!.indexOf(":") + 1) + 1)]);
    writeFileSync(join(this.at.mount, this.path, "cgroup.procs"), String(pid));
  }

  remove(): void {
    for (const [pid, was] of this.#moved.splice(0)) {
      try {
        writeFileSync(join(this.at.mount, was, "cgroup.procs"), String(pid));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err; // ESRCH: it has exited
      }
    }
    for (const dir of this.#made.splice(0).reverse()) {
      const users = madeHere.get(dir)! - 1;
      if (users > 0) {
        madeHere.set(dir, users);
        continue;
      }
      madeHere.delete(dir);
      rmdirSync(dir);
    }
  }
}

/** A systemd-driver BestEffort pod cgroup under cgroup v2 for `uid`, or undefined where v2 is not mounted at its root. */
export function podCgroupV2(uid: string): PodCgroup | undefined {
  const v2 = hierarchy("cgroup2");
  const slice = `kubepods-besteffort-pod${uid.replaceAll("-", "_")}.slice`;
  return v2 && new PodCgroup(v2, `kubepods.slice/kubepods-besteffort.slice/${slice}`);
}

/** Skip loudly: this machine lacks what the test needs (a cgroup hierarchy, a writable one), which is no failure of the code. */
export function lacking(t: TestContext, what: string): void {
  process.stderr.write(`\n*** SKIPPED: ${t.name}: ${what} ***\n\n`);
  t.skip(what);
}
