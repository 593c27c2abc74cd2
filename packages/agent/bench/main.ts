/**
 * `npm run bench -w sockdiag-agent [-- scale|latency]` (also the "agent" section of the root `npm
 * run bench`). "scale" (bench/scale.ts): the agent over 100,000 endpoints. "latency": how
 * long the agent takes from the watch event that removes backends to the end of the batch that
 * destroyed their sockets, and the agent's event-loop delay meanwhile. The agent runs in-process
 * against the stand-in API server with --coalesce 0 (the window is a deliberate wait, added on
 * top in production), its real terminator (sockdiag/promises, one pass per batch), over 100
 * namespaces held by the core bench's multi-namespace holder; then the same batches with the BPF
 * one pass (`--one-pass on`: the sockets found in one pass over every task's files, issue 42). For
 * comparison, the same removal done with one terminate() pass per backend. On more than one core, each one-pass batch is also
 * timed with the whole process pinned to one core, in turns with the rounds on every core (the
 * same minutes of a machine whose load moves), beside the kernel's own 2-core ratio for the raw
 * dumps of the same namespaces. Needs root. With BENCH_FIGURES=FILE, the latency medians of the
 * one-pass batches are also written to FILE as JSON ({ cores, batches: [{ what, backends, ms,
 * oneCoreMs }], kernelRatio }), for the root bench's goals.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { addNetns, removeNetns } from "sockdiag";
import { BackendTerminator } from "sockdiag/promises";
import type { AgentBackend } from "../src/backend.js";
import { emptyOutcome, type Terminator } from "../src/terminator.js";
import {
  cpuList,
  metric,
  onOneCore,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  udpSlice,
  until,
} from "../test/kit/index.js";
import { scaleBench } from "./scale.js";

const NAMESPACES = Number(process.env.BENCH_NAMESPACES ?? 100);
/** Bound or connected elsewhere: sockets the dumps walk past. */
const OTHERS_PER_NAMESPACE = 100;
const PORT = 5353;
const ROUNDS = 9;
/**
 * Batches run and not timed after the agent's first: the pool's workers compile the termination's
 * code over their first batches, which would otherwise sit in the first case's median.
 */
const WARM_UP = 5;
const MULTI_HOLDER = new URL("../../../../dist/bench/multi-holder.js", import.meta.url).pathname;
/** The core bench's machine line (CPU, Node, load average), from its build as MULTI_HOLDER is. */
const MACHINE = new URL("../../../../dist/bench/machine.js", import.meta.url).href;
/** The core bench's raw-dump ceiling: how far the kernel lets these namespaces' dumps spread over cores. */
const KERNEL_CEILING = new URL("../../../../dist/bench/kernel-ceiling.js", import.meta.url).href;
const backendsOf = (n: number, third: number) =>
  Array.from({ length: n }, (_, i) => ({ address: `127.13.${third}.${i + 1}`, port: PORT }));

interface Holding {
  refill(): Promise<void>;
  stop(): Promise<void>;
}

/** One multi-holder child with `perBackend` clients of each backend in every namespace. */
async function hold(paths: string[], backends: { address: string; port: number }[]): Promise<Holding> {
  const plan = {
    namespaces: paths,
    perNamespace: OTHERS_PER_NAMESPACE + backends.length,
    targets: 1,
    target: { address: "127.13.99.1", port: 6000 },
    backends,
  };
  const child: ChildProcess = spawn(process.execPath, [MULTI_HOLDER, JSON.stringify(plan)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const ready = () =>
    new Promise<void>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`multi-holder exited with ${code}`));
      const onLine = (line: string) => {
        if (line !== "ready") return;
        lines.off("line", onLine);
        child.off("exit", onExit);
        resolve();
      };
      lines.on("line", onLine);
      child.once("exit", onExit);
    });
  await ready();
  return {
    async refill() {
      const r = ready();
      child.stdin!.write("targets\n");
      await r;
    },
    async stop() {
      child.kill("SIGKILL");
      if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
    },
  };
}

/** The comparison: what an agent without the batch call would do, one pass per backend. */
function onePassPerBackend(dir: string): Terminator {
  return {
    async terminate(backends: readonly AgentBackend[]) {
      const outcome = emptyOutcome();
      const t = new BackendTerminator({ netnsDirs: [dir], discover: false, conntrack: false });
      for (const b of backends) {
        const r = await t.terminate(b);
        outcome.sockets.destroyed += r.total.destroyed;
        outcome.sockets.matched += r.total.matched;
        outcome.namespaces.visited += r.namespaces.length;
      }
      return outcome;
    },
  };
}

interface Figure {
  ms: number;
  loopMaxMs: number;
  destroyed: number;
}

/** Remove `removed` from the Service and time it; then put them back and wait until the agent knows them again. */
async function round(
  api: StandInApiServer,
  agent: TestAgent,
  all: string[],
  removed: number,
  holding: Holding,
): Promise<Figure> {
  const kept = all.slice(removed);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const batch = agent.nextLog("removal batch");
  loop.enable();
  const t0 = performance.now();
  api.apply(udpSlice("bench-a", "bench", PORT, kept));
  const line = await batch;
  const ms = performance.now() - t0;
  loop.disable();
  const destroyed = (line.sockets as { destroyed: number }).destroyed;
  await holding.refill();
  api.apply(udpSlice("bench-a", "bench", PORT, all));
  await until(
    async () => (await metric(agent.url, "sockdiag_agent_backends")) === all.length,
    10_000,
    "the backends to be known again",
  );
  return { ms, loopMaxMs: loop.max / 1e6, destroyed };
}

const AFTERCARE_MS = 10_000;

/**
 * What aftercare costs: one backend removed, then its passes over every namespace for a window of
 * AFTERCARE_MS; this process's CPU time (the agent and the library's worker thread; the stand-in
 * server idles) over the window, beside the same time with nothing to do.
 */
async function aftercareCost(
  api: StandInApiServer,
  stateDir: string,
  dir: string,
  all: string[],
  holding: Holding,
): Promise<string> {
  const agent = await startTestAgent(api, {
    stateDir,
    netnsDirs: [dir],
    coalesceMs: 0,
    aftercareMs: AFTERCARE_MS,
  });
  try {
    const idleFrom = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, AFTERCARE_MS));
    const idle = process.cpuUsage(idleFrom);
    const batch = agent.nextLog("removal batch");
    api.apply(udpSlice("bench-a", "bench", PORT, all.slice(1)));
    await batch;
    const from = process.cpuUsage();
    // Read in-process: scraping /metrics every 10 ms would cost more CPU than what is measured.
    const value = async (m: { get(): Promise<{ values: { value: number }[] }> }) =>
      (await m.get()).values[0]?.value;
    await until(
      async () =>
        (await value(agent.agent.metrics.aftercarePasses)) !== 0 &&
        (await value(agent.agent.metrics.aftercare)) === 0,
      AFTERCARE_MS * 3,
      "aftercare to end",
    );
    // The last pass may still run: stop waits for it.
    await agent.stop();
    const used = process.cpuUsage(from);
    const passes = (await value(agent.agent.metrics.aftercarePasses)) ?? 0;
    const ms = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
    await holding.refill();
    api.apply(udpSlice("bench-a", "bench", PORT, all));
    return (
      `  aftercare, 1 backend, ${AFTERCARE_MS / 1000} s window: ${passes} passes over ${NAMESPACES} namespaces, ` +
      `CPU (user + system, this process) ${ms(used).toFixed(0)} ms, ${(ms(used) / passes).toFixed(0)} ms a pass; ` +
      `idle control ${ms(idle).toFixed(0)} ms`
    );
  } finally {
    await agent.stop();
  }
}

interface KernelCeiling {
  serialMs: number;
  twoMs: number;
  pinnedMs: number;
  sockets: number;
}

/** The raw dumps of the host and `paths`: one process, two at once, two pinned to one core; their line added to `out`. */
async function kernelRatioOf(paths: string[], out: string[]): Promise<number> {
  const { kernelCeiling } = (await import(KERNEL_CEILING)) as {
    kernelCeiling: (paths: readonly string[]) => Promise<KernelCeiling>;
  };
  const raw = await kernelCeiling([`/proc/${process.pid}/ns/net`, ...paths]);
  const ratio = raw.pinnedMs / raw.twoMs;
  out.push(
    `  raw kernel IPv4 UDP dumps, host + ${paths.length} (${raw.sockets} sockets): one process ${raw.serialMs.toFixed(1)} ms, ` +
      `two at once (every other namespace each) ${raw.twoMs.toFixed(1)} ms, the two pinned to one core ` +
      `${raw.pinnedMs.toFixed(1)} ms: the kernel's 2-core ratio ${ratio.toFixed(2)} x`,
  );
  return ratio;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function latencyBench(): Promise<string[]> {
  const dir = join(tmpdir(), `sdt-agent-${process.pid}-bench`);
  mkdirSync(dir);
  const names = Array.from({ length: NAMESPACES }, (_, i) => `ns${i}`);
  const api = await StandInApiServer.start();
  const state = await scratchDir("bench");
  let holding: Holding | undefined;
  const batches: { what: string; backends: number; ms: number; oneCoreMs?: number }[] = [];
  /** This process's CPUs, where there is more than one to take away. */
  const cpus = availableParallelism() > 1 ? cpuList() : undefined;
  const out: string[] = [
    `sockdiag-agent: watch event -> end of the batch that destroyed the sockets (--coalesce 0)`,
    `${NAMESPACES} namespaces, ${OTHERS_PER_NAMESPACE} other UDP sockets in each, 1 client of each backend in each; Node ${process.version}; ` +
      `${availableParallelism()} core(s) for this process (the terminator's pool: a worker per core)`,
  ];
  try {
    for (const name of names) addNetns(name, { dir, loopbackUp: true }).close();
    const backends = backendsOf(50, 50);
    const all = backends.map((b) => b.address);
    holding = await hold(
      names.map((n) => join(dir, n)),
      backends,
    );
    api.apply(udpSlice("bench-a", "bench", PORT, all));
    const cases: {
      label: string;
      /** A one-pass batch's short name, for the figures file; the comparison has none. */
      what?: string;
      conntrack: boolean;
      perBackend?: boolean;
      /** The BPF one pass (issue 42) instead of the walk the other cases take. */
      onePass?: boolean;
      removed: number[];
      rounds: number;
    }[] = [
      {
        label: "one pass per batch, sockets + conntrack",
        what: "sockets + conntrack",
        conntrack: true,
        removed: [1, 50],
        rounds: ROUNDS,
      },
      {
        label: "one pass per batch, sockets only (--no-conntrack)",
        what: "sockets only",
        conntrack: false,
        removed: [1, 50],
        rounds: ROUNDS,
      },
      {
        label: "BPF one pass (--one-pass on) per batch, sockets + conntrack",
        conntrack: true,
        onePass: true,
        removed: [1, 50],
        rounds: ROUNDS,
      },
      {
        label: "BPF one pass (--one-pass on) per batch, sockets only",
        conntrack: false,
        onePass: true,
        removed: [1, 50],
        rounds: ROUNDS,
      },
      {
        label: "one pass per backend, sockets only",
        conntrack: false,
        perBackend: true,
        removed: [50],
        rounds: 1,
      },
    ];
    for (const c of cases) {
      const agent = await startTestAgent(api, {
        stateDir: state.path,
        netnsDirs: [dir],
        coalesceMs: 0,
        conntrack: c.conntrack,
        ...(c.onePass ? { onePass: "on" as const } : {}),
        ...(c.perBackend ? { terminator: onePassPerBackend(dir) } : {}),
      });
      try {
        for (const removed of c.removed) {
          // The agent's first batch also starts the pool's other workers: shown apart, not in the median.
          const warming = c === cases[0] && removed === c.removed[0];
          const first = warming ? await round(api, agent, all, removed, holding) : undefined;
          if (warming) for (let i = 0; i < WARM_UP; i++) await round(api, agent, all, removed, holding);
          const figures: Figure[] = [];
          const oneCore: Figure[] = [];
          const held = holding;
          const free = () => round(api, agent, all, removed, held);
          const pinned = c.what === undefined || cpus === undefined ? undefined : () => onOneCore(cpus, free);
          for (let i = 0; i < c.rounds; i++) {
            // In turns, so that neither always runs second.
            if (pinned && i % 2 === 1) oneCore.push(await pinned());
            figures.push(await free());
            if (pinned && i % 2 === 0) oneCore.push(await pinned());
          }
          const expected = removed * NAMESPACES;
          const bad = [first, ...figures, ...oneCore].find((f) => f && f.destroyed !== expected);
          if (bad) throw new Error(`${c.label}: destroyed ${bad.destroyed} sockets, expected ${expected}`);
          const ms = median(figures.map((f) => f.ms));
          const oneCoreMs = pinned ? median(oneCore.map((f) => f.ms)) : undefined;
          if (c.what) batches.push({ what: c.what, backends: removed, ms, oneCoreMs });
          out.push(
            `  ${c.label}: ${String(removed).padStart(2)} backend(s), ${String(expected).padStart(4)} sockets: ` +
              `${ms.toFixed(1)} ms` +
              (oneCoreMs === undefined
                ? ""
                : ` (pinned to one core ${oneCoreMs.toFixed(1)} ms: ${(ms / oneCoreMs).toFixed(2)} x)`) +
              `; event-loop max delay ` +
              `${median(figures.map((f) => f.loopMaxMs)).toFixed(1)} ms` +
              (c.rounds > 1
                ? ` (median of ${c.rounds}; worst ${Math.max(...figures.map((f) => f.loopMaxMs)).toFixed(1)} ms)`
                : "") +
              (first ? `; the agent's first batch ${first.ms.toFixed(1)} ms, then ${WARM_UP} untimed` : "") +
              `; RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`,
          );
        }
      } finally {
        await agent.stop();
      }
    }
    out.push(await aftercareCost(api, state.path, dir, all, holding));
    const kernelRatio =
      availableParallelism() > 1
        ? await kernelRatioOf(
            names.map((n) => join(dir, n)),
            out,
          )
        : undefined;
    const figuresFile = process.env.BENCH_FIGURES;
    if (figuresFile)
      writeFileSync(figuresFile, JSON.stringify({ cores: availableParallelism(), batches, kernelRatio }));
  } finally {
    await holding?.stop();
    for (const name of names) {
      try {
        removeNetns(name, { dir });
      } catch {
        // Never made (setup failed part-way).
      }
    }
    spawnSync("umount", ["--lazy", dir], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
    await state.remove();
    await api.close();
  }
  return out;
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const sections = { scale: scaleBench, latency: latencyBench };
  for (const name of asked)
    if (!(name in sections)) throw new Error(`unknown section ${name} (scale, latency)`);
  const { machineLine } = (await import(MACHINE)) as { machineLine: () => string };
  console.log(machineLine());
  for (const [name, run] of Object.entries(sections))
    if (asked.length === 0 || asked.includes(name)) console.log((await run()).join("\n"));
}

main().catch((err: Error) => {
  console.error(`agent bench failed: ${err.stack ?? err.message}`);
  process.exitCode = 1;
});
