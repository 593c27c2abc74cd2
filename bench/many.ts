/** A scene of many small pinned namespaces, held by multi-holder children. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { add, remove } from "../src/netns/index.js";

const HOLDER = new URL("./multi-holder.js", import.meta.url).pathname;
/** Sockets per child: below the 20,000 descriptors a process may hold here. */
const PER_CHILD = 18_000;

export interface ManyScene {
  names: string[];
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
}

export async function manyNamespaces(
  label: string,
  count: number,
  perNamespace: number,
  targets: number,
  target: { address: string; port: number },
): Promise<ManyScene> {
  const names = Array.from({ length: count }, (_, i) => `sdb-${process.pid}-${label}-${i}`);
  const children: ChildProcess[] = [];
  const made: string[] = [];
  const stop = async () => {
    for (const c of children) c.kill("SIGKILL");
    await Promise.all(
      children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)),
    );
    for (const name of made.splice(0)) remove(name);
  };
  try {
    for (const name of names) {
      add(name, { loopbackUp: true }).close();
      made.push(name);
    }
    const perChild = Math.max(1, Math.floor(PER_CHILD / perNamespace));
    for (let i = 0; i < count; i += perChild) {
      const plan = {
        namespaces: names.slice(i, i + perChild).map((n) => `/run/netns/${n}`),
        perNamespace,
        targets,
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
