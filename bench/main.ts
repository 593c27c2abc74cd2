/**
 * `npm run bench [-- SECTION...]`: sockdiag against ss on the same namespaces, in one run.
 * Sections: codec, list, destroy, netns, terminate, onepass, promises, conntrack, agent (default: all).
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
import { benchDiscovery } from "./discover.js";
import { benchList } from "./list.js";
import { cleanupBenchLeftovers } from "./many.js";
import { environmentNote, goalSummary, recordGoal } from "./measure.js";
import { benchNamespaces } from "./namespaces.js";
import { benchOnePass } from "./one-pass.js";
import { benchPromises } from "./promises.js";
import { benchTerminate } from "./terminate.js";

/**
 * The agent package's bench, as a child process (the library's bench does not import the agent).
 * Its latency section times each batch on every core and, in turns, pinned to one core: the
 * second core's share, judged against halving and against the kernel's own 2-core ratio.
 */
function benchAgent(): string[] {
  const script = new URL("../../packages/agent/dist/bench/main.js", import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), "sdb-agent-"));
  const figures = join(dir, "figures.json");
  try {
    const r = spawnSync(process.execPath, ["--enable-source-maps", script], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, BENCH_FIGURES: figures },
    });
    if (r.status !== 0) throw new Error(`agent bench exited with ${r.status ?? r.signal}`);
    recordAgentGoals(JSON.parse(readFileSync(figures, "utf8")) as AgentFigures);
    return r.stdout.trimEnd().split("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface AgentFigures {
  cores: number;
  /** The one-pass batches (sockets + conntrack, sockets only), medians; pinned to one core where there are more. */
  batches: { what: string; backends: number; ms: number; oneCoreMs?: number }[];
  /** The raw dumps of the same namespaces, two processes pinned to one core over the two on every core. */
  kernelRatio?: number;
}

/**
 * Each one-pass batch's latency on every core over the same batch pinned to one core (halved), and
 * the kernel's own 2-core ratio for the raw dumps of those namespaces over the batch's.
 */
function recordAgentGoals(figures: AgentFigures): void {
  for (const b of figures.batches) {
    if (b.oneCoreMs === undefined) continue;
    const which = `${b.what}, ${b.backends} backend${b.backends === 1 ? "" : "s"}`;
    recordGoal(`agent batch, ${figures.cores} cores / 1 (${which})`, b.ms / b.oneCoreMs, 0.5);
    if (figures.kernelRatio !== undefined)
      recordGoal(
        `agent batch, the kernel's 2-core ratio / its own (${which})`,
        figures.kernelRatio / (b.oneCoreMs / b.ms),
        1,
      );
  }
}

const SECTIONS: Record<string, () => Promise<string[]> | string[]> = {
  codec: benchCodec,
  list: benchList,
  destroy: benchDestroy,
  netns: async () => [...(await benchNamespaces()), "", ...(await benchDiscovery())],
  terminate: benchTerminate,
  onepass: benchOnePass,
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
