/** A scene of many small pinned namespaces, held by multi-holder children. */
import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { add, remove } from "../src/netns/index.js";
import { MNT_DETACH, MS_BIND, mount, umount2 } from "../src/sys/namespace.js";

const HOLDER = new URL("./multi-holder.js", import.meta.url).pathname;
/** Sockets per child: below the 20,000 descriptors a process may hold here. */
const PER_CHILD = 18_000;

export interface ManyScene {
  names: string[];
  /**
   * A pin directory holding the scene's namespaces only (bind mounts of their /run/netns pins):
   * what a walk over "all" is given, so that it visits no namespace of other work on the machine.
   */
  dir: string;
  /** Re-open the target sockets in every namespace (after they were destroyed). */
  refill(): Promise<void>;
  stop(): Promise<void>;
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const onExit = (code: number | null) => reject(new Error(`multi-holder exited with ${code}`));
    const onLine = (line: string) => {
      if (line !== "ready") return;
      lines.off("line", onLine);
      lines.close();
      child.off("exit", onExit);
      resolve();
    };
    lines.on("line", onLine);
    child.once("exit", onExit);
  });
}

/** Remove the namespaces of benchmark runs that died before removing them ("sdb-<pid>-..."). */
export function cleanupBenchLeftovers(): void {
  let names: string[];
  try {
    names = readdirSync("/run/netns");
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^sdb-(\d+)-/.exec(name)?.[1];
    if (pid && !existsSync(`/proc/${pid}`)) remove(name);
  }
  for (const entry of readdirSync(tmpdir())) {
    const pid = /^sdb-(\d+)-.*-pins$/.exec(entry)?.[1];
    if (pid && !existsSync(`/proc/${pid}`)) unpinAll(join(tmpdir(), entry));
  }
}

/** Detach every pin of a scene's own pin directory, then remove it. */
function unpinAll(dir: string): void {
  for (const name of readdirSync(dir)) {
    try {
      umount2(join(dir, name), MNT_DETACH);
    } catch {
      // Its file was made but never mounted.
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `count` pinned namespaces of `perNamespace` UDP sockets, `targets` of them connected to `target`
 * (a number for every namespace, or one each); with `everyOtherEmpty`, the odd ones hold no socket
 * at all.
 */
export async function manyNamespaces(
  label: string,
  count: number,
  perNamespace: number,
  targets: number | readonly number[],
  target: { address: string; port: number },
  everyOtherEmpty = false,
): Promise<ManyScene> {
  const names = Array.from({ length: count }, (_, i) => `sdb-${process.pid}-${label}-${i}`);
  const dir = join(tmpdir(), `sdb-${process.pid}-${label}-pins`);
  const children: ChildProcess[] = [];
  const made: string[] = [];
  const stop = async () => {
    for (const c of children) c.kill("SIGKILL");
    await Promise.all(
      children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)),
    );
    if (existsSync(dir)) unpinAll(dir);
    for (const name of made.splice(0)) remove(name);
  };
  try {
    mkdirSync(dir);
    for (const name of names) {
      add(name, { loopbackUp: true }).close();
      made.push(name);
      closeSync(openSync(join(dir, name), "w"));
      mount(`/run/netns/${name}`, join(dir, name), "none", MS_BIND);
    }
    const held = names.map((name, i) => ({ name, i })).filter(({ i }) => !everyOtherEmpty || i % 2 === 0);
    const perChild = Math.max(1, Math.floor(PER_CHILD / perNamespace));
    for (let i = 0; i < held.length; i += perChild) {
      const slice = held.slice(i, i + perChild);
      const plan = {
        namespaces: slice.map(({ name }) => `/run/netns/${name}`),
        perNamespace,
        targets: typeof targets === "number" ? targets : slice.map(({ i: n }) => targets[n] ?? 0),
        target,
      };
      children.push(
        spawn(process.execPath, [HOLDER, JSON.stringify(plan)], { stdio: ["pipe", "pipe", "inherit"] }),
      );
    }
    await Promise.all(children.map(ready));
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    names,
    dir,
    async refill() {
      const waits = children.map(ready);
      for (const c of children) c.stdin!.write("targets\n");
      await Promise.all(waits);
    },
    stop,
  };
}

/**
 * net.ipv4.udp_child_hash_entries (Linux 6.2+): namespaces created while it is set get a UDP hash
 * table of their own, instead of sharing the host's. A UDP dump walks the whole table it reads, so
 * with a shared table every namespace's dump walks every UDP socket of the machine — the floor of
 * both ss and sockdiag here. The bench measures both layouts; it sets the value only while creating
 * its own namespaces and restores it at once.
 */
const UDP_CHILD_HASH = "/proc/sys/net/ipv4/udp_child_hash_entries";

export async function withChildHash<T>(entries: number | undefined, make: () => Promise<T>): Promise<T> {
  if (entries === undefined || !existsSync(UDP_CHILD_HASH)) return make();
  const before = readFileSync(UDP_CHILD_HASH, "utf8").trim();
  writeFileSync(UDP_CHILD_HASH, String(entries));
  try {
    return await make();
  } finally {
    writeFileSync(UDP_CHILD_HASH, before);
  }
}
