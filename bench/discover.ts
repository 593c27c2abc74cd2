/**
 * What discovery through /proc costs where "every namespace" is the default (terminate-backend, the
 * terminator, the agent): the walk over /proc/PID/ns/net on a node running thousands of processes,
 * in-process and as terminate-backend's whole run (dry run, sockets only), beside the same with
 * --no-discover (pins only).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { walkNetns } from "../src/netns/index.js";
import { fmt, row, timeFn, timeProcesses } from "./measure.js";
import { CLI } from "./scene.js";

const EXTRA_PROCESSES = 4000;

/** Processes on the machine now (the numeric entries of /proc). */
function processCount(): number {
  return readdirSync("/proc").filter((e) => /^\d+$/.test(e)).length;
}

/**
 * Start `count` sleeping processes in a process group of their own, resolved once they all run;
 * `stop` kills that group (only what this started).
 */
async function sleepers(count: number): Promise<{ stop(): void }> {
  const before = processCount();
  const shell = spawn("bash", ["-c", `for i in $(seq ${count}); do sleep 3600 & done; wait`], {
    detached: true,
    stdio: "ignore",
  });
  const stop = () => {
    if (shell.pid) process.kill(-shell.pid, "SIGKILL");
  };
  try {
    while (processCount() < before + count) await new Promise((r) => setTimeout(r, 50));
  } catch (err) {
    stop();
    throw err;
  }
  return { stop };
}

export async function benchDiscovery(): Promise<string[]> {
  const out = [`discovery: every namespace on a node with ${EXTRA_PROCESSES} more processes`];
  const pins = mkdtempSync(join(tmpdir(), "sdb-discover-"));
  const group = await sleepers(EXTRA_PROCESSES);
  try {
    const processes = processCount();
    let found = 0;
    const walk = (discover: boolean) =>
      timeFn(() => {
        found = 0;
        for (const _ of walkNetns({ netnsDirs: [pins], discover })) found++;
      }, 5);
    const pinsOnly = walk(false);
    const discovered = walk(true);
    out.push(row("walk of the pins only (an empty directory)", fmt.ms(pinsOnly)));
    out.push(
      row(
        `walk with discovery (${processes} processes, ${found} namespaces)`,
        fmt.ms(discovered),
        `${((discovered / processes) * 1000).toFixed(1)} µs/process`,
      ),
    );
    const run = ["terminate-backend", "127.0.0.1:9", "--netns-dir", pins, "--dry-run", "--no-conntrack"];
    const [noDiscover, every] = timeProcesses([
      [process.execPath, CLI, ...run, "--no-discover"],
      [process.execPath, CLI, ...run],
    ]) as [number, number];
    out.push(row("sockdiag terminate-backend --no-discover (whole process)", fmt.ms(noDiscover)));
    out.push(
      row(
        "sockdiag terminate-backend, every namespace (whole process)",
        fmt.ms(every),
        `${fmt.ratio(every, noDiscover)} --no-discover`,
      ),
    );
  } finally {
    group.stop();
    rmSync(pins, { recursive: true, force: true });
  }
  return out;
}
