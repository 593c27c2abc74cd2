/**
 * This process's CPU affinity, changed for every thread at once (`taskset -a`): for work that must
 * run on one core in the middle of a process that uses them all (the agent bench's one-core rounds,
 * in turns with those on every core; the pool's test of a shrunk CPU set).
 */
import { spawnSync } from "node:child_process";

/** The CPUs this process may run on, as taskset lists them ("0-1", "0,2"). */
export function cpuList(): string {
  const r = spawnSync("taskset", ["-c", "-p", String(process.pid)], { encoding: "utf8" });
  const list = /:\s*(\S+)\s*$/.exec(r.stdout)?.[1];
  if (r.status !== 0 || !list) throw new Error(`taskset -c -p ${process.pid}: ${r.stderr || r.stdout}`);
  return list;
}

/** Moves every thread of this process (workers and libuv's pool included) to `list`. */
function moveTo(list: string): void {
  const r = spawnSync("taskset", ["-a", "-c", "-p", list, String(process.pid)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`taskset -a -c -p ${list} ${process.pid}: ${r.stderr}`);
}

/**
 * `work` with the whole process on the first CPU of `all` (the list from cpuList), then back on
 * `all`. Threads started meanwhile inherit the one core and are moved back with the rest.
 */
export async function onOneCore<T>(all: string, work: () => Promise<T>): Promise<T> {
  moveTo(/^\d+/.exec(all)![0]);
  try {
    return await work();
  } finally {
    moveTo(all);
  }
}
