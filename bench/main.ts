/**
 * `npm run bench [-- SECTION...]`: sockdiag against ss on the same namespaces, in one run.
 * Sections: codec, list, destroy, netns, terminate, promises, conntrack, agent (default: all).
 * Needs root. The agent section runs the sockdiag-agent package's own bench (packages/agent/bench).
 * Ratios are what count; absolute times move from machine to machine.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanupLeftovers } from "../test/kit/index.js";
import { benchCodec } from "./codec.js";
import { benchConntrack } from "./conntrack.js";
import { benchDestroy } from "./destroy.js";
import { benchList } from "./list.js";
import { cleanupBenchLeftovers } from "./many.js";
import { environmentNote, goalSummary, recordGoal } from "./measure.js";
import { benchNamespaces } from "./namespaces.js";
import { benchPromises } from "./promises.js";
import { benchTerminate } from "./terminate.js";

/**
 * The agent package's bench, as a child process (the library's bench does not import the agent);
 * then its latency section again pinned to one core (`taskset -c 0`), where the terminator's pool
 * has one worker: the single-thread figures the pool's are judged against (goal: halved).
 */
function benchAgent(): string[] {
  const script = new URL("../../packages/agent/dist/bench/main.js", import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), "sdb-agent-"));
  const run = (figures: string, command: string, args: string[]) => {
    const r = spawnSync(command, args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, BENCH_FIGURES: join(dir, figures) },
    });
    if (r.status !== 0) throw new Error(`agent bench exited with ${r.status ?? r.signal}`);
    return r.stdout.trimEnd().split("\n");
  };
  try {
    const lines = [
      ...run("all.json", process.execPath, ["--enable-source-maps", script]),
      "",
      "the agent's latency section again, taskset -c 0 (one thread):",
      ...run("one.json", "taskset", ["-c", "0", process.execPath, "--enable-source-maps", script, "latency"]),
    ];
    recordAgentGoals(readFigures(join(dir, "all.json")), readFigures(join(dir, "one.json")));
    return lines;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface AgentFigures {
  cores: number;
  /** The one-pass batches: sockets + conntrack, sockets only; medians. */
  batches: { what: string; backends: number; ms: number }[];
  /** The raw dumps of the same namespaces, two processes pinned to one core over the two on every core. */
  kernelRatio?: number;
}

const readFigures = (path: string) => JSON.parse(readFileSync(path, "utf8")) as AgentFigures;

/**
 * Each one-pass batch's latency on every core over the same batch pinned to one core (halved), and
 * the kernel's own 2-core ratio for the raw dumps of those namespaces over the batch's.
 */
function recordAgentGoals(all: AgentFigures, one: AgentFigures): void {
  for (const b of all.batches) {
    const pinned = one.batches.find((o) => o.what === b.what && o.backends === b.backends);
    if (!pinned) continue;
    const which = `${b.what}, ${b.backends} backend${b.backends === 1 ? "" : "s"}`;
    recordGoal(`agent batch, ${all.cores} cores / 1 (${which})`, b.ms / pinned.ms, 0.5);
    if (all.kernelRatio !== undefined)
      recordGoal(
        `agent batch, the kernel's 2-core ratio / its own (${which})`,
        all.kernelRatio / (pinned.ms / b.ms),
        1,
      );
  }
}

const SECTIONS: Record<string, () => Promise<string[]> | string[]> = {
  codec: benchCodec,
  list: benchList,
  destroy: benchDestroy,
  netns: benchNamespaces,
  terminate: benchTerminate,
  promises: benchPromises,
  conntrack: benchConntrack,
  agent: benchAgent,
};

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  for (const name of wanted)
    if (!SECTIONS[name])
      throw new Error(`unknown section ${name}; known: ${Object.keys(SECTIONS).join(", ")}`);
  console.log(environmentNote());
  await cleanupLeftovers();
  cleanupBenchLeftovers();
  for (const [name, run] of Object.entries(SECTIONS)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    const lines = await run();
    console.log(`\n${lines.join("\n")}`);
  }
  const summary = goalSummary();
  if (summary.length > 0) console.log(`\n${summary.join("\n")}\n${environmentNote()}`);
}

main().catch((err: Error) => {
  console.error(`bench failed: ${err.stack ?? err.message}`);
  process.exitCode = 1;
});
