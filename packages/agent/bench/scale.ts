/**
 * The agent at cluster scale: Services of 10 UDP endpoints each (one slice per Service, varied
 * addresses) served by the stand-in API server in this process, watched by the agent's bin as its
 * own process (so that its memory is its own): how long until it is ready, its resident memory
 * after the sync, after 1,000 updates and at its peak, the longest event-loop delay during the
 * sync (its own prom-client gauge, read at the first scrape), and how long one removal takes from
 * its event to the end of its batch with --coalesce 0 (host namespace only). It runs at 10,000,
 * 40,000 and 100,000 Services (BENCH_SERVICES: a comma-separated list), then at 10,000 beside
 * 100,000 TCP-only Services (BENCH_TCP_SERVICES; 0: not), which the agent (UDP only) does not act
 * on, and prints RSS against Service count. The agent runs with the DaemonSet's NODE_OPTIONS and
 * MALLOC_ARENA_MAX.
 * The event-loop delay is read once the first state file is written (the save after the sync was
 * the longest turn). As root, the removal batches visit PIN_NAMESPACES empty namespaces beside the
 * host, so that the termination's pool runs all its workers (one per core, up to 8) and the peak
 * counts them; otherwise the host alone, one worker. BENCH_AGENT_FLAGS=--trace-gc shows the agent's
 * collector pauses on stderr. Once the agent has stopped, a restart's load of the state file it
 * wrote (bench/state-load.ts, RESTART_LOADS fresh processes with the agent's environment): the
 * longest turn of the event loop while the file is read.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { addNetns, removeNetns } from "sockdiag";
import { endpointSlice, metric, StandInApiServer, scratchDir, udpSlice, until } from "../test/kit/index.js";

const SIZES = (process.env.BENCH_SERVICES ?? "10000,40000,100000").split(",").map(Number);
const TCP_SERVICES = Number(process.env.BENCH_TCP_SERVICES ?? 100_000);
const ENDPOINTS = 10;
/** Namespaces pinned for the batches to visit (as root): as many as the pool has workers at most. */
const PIN_NAMESPACES = 8;
const UPDATES = 1000;
/** Restarts' loads of the state file measured per size, each in a fresh process. */
const RESTART_LOADS = 3;
/** Node flags put before the agent's bin (BENCH_AGENT_FLAGS, split at spaces): --cpu-prof, --import a probe. */
const AGENT_FLAGS = (process.env.BENCH_AGENT_FLAGS ?? "").split(" ").filter((f) => f !== "");
const BIN = fileURLToPath(new URL("../../bin/sockdiag-agent.js", import.meta.url));
const STATE_LOAD = fileURLToPath(new URL("./state-load.js", import.meta.url));

/**
 * The environment the DaemonSet runs the agent with that sets its memory (deploy/daemonset.yaml's
 * NODE_OPTIONS, V8's heap sizing, and MALLOC_ARENA_MAX, glibc's): the agent is measured as deployed.
 */
const DAEMONSET = readFileSync(new URL("../../../../deploy/daemonset.yaml", import.meta.url), "utf8");
const daemonSetEnv = (name: string) =>
  new RegExp(`- name: ${name}\\n\\s+value: "?([^"\\n]*)"?\\n`).exec(DAEMONSET)![1]!;
const AGENT_ENV = {
  NODE_OPTIONS: daemonSetEnv("NODE_OPTIONS"),
  MALLOC_ARENA_MAX: daemonSetEnv("MALLOC_ARENA_MAX"),
};

/** The goals of issue 19, at 100,000 endpoints. */
const GOALS = { rssAfterSyncMB: 150, peakMB: 250, readyS: 20, loopDuringSyncMs: 100, removalS: 1 };

/** Endpoint `i` (0-31) of Service `s` (0-524,287): distinct across the cluster. */
const address = (s: number, i: number) => {
  const n = s * 32 + i + 1;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};
const endpointsOf = (s: number, first = 0) =>
  Array.from({ length: ENDPOINTS }, (_, i) => address(s, i + first));
const serviceSlice = (s: number, first = 0) =>
  udpSlice(`svc${s}-x`, `svc${s}`, 53, endpointsOf(s, first), `ns${s % 100}`);
/** A Service the agent does not act on: HTTP on TCP. */
const tcpSlice = (s: number) =>
  endpointSlice({
    namespace: `ns${s % 100}`,
    name: `web${s}-x`,
    service: `web${s}`,
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints: endpointsOf(s).map((a) => ({
      addresses: [a],
      ready: true,
      serving: true,
      terminating: false,
    })),
  });

/** VmRSS and VmHWM (peak) of a process, in MB. */
function memoryOf(pid: number): { rssMB: number; peakMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kB = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rssMB: kB("VmRSS") / 1024, peakMB: kB("VmHWM") / 1024 };
}

/** The agent's JSON lines, and a way to await the next one with a given msg. */
function linesOf(child: ChildProcess): (msg: string) => Promise<Record<string, unknown>> {
  const waiters: { msg: string; resolve: (l: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout! }).on("line", (text) => {
    // V8's own lines (BENCH_AGENT_FLAGS=--trace-gc) go to stderr as they are.
    if (!text.startsWith("{")) {
      console.error(text);
      return;
    }
    const line = JSON.parse(text) as Record<string, unknown>;
    if (line.level !== undefined && (line.level as number) >= 50) console.error(text);
    for (let i = waiters.length - 1; i >= 0; i--)
      if (waiters[i]!.msg === line.msg) waiters.splice(i, 1)[0]!.resolve(line);
  });
  return (msg) => new Promise((resolve) => waiters.push({ msg, resolve }));
}

export async function scaleBench(): Promise<string[]> {
  const runs: Run[] = [];
  for (const services of SIZES) runs.push(await scaleRun(services, 0));
  if (TCP_SERVICES > 0) runs.push(await scaleRun(SIZES[0]!, TCP_SERVICES));
  const lines = runs.flatMap((r) => r.lines);
  lines.push(
    "RSS against Service count (UDP Services x 10 endpoints; TCP-only Services beside, not acted on):",
    `  ${"UDP Services".padStart(12)} ${"TCP-only".padStart(9)} ${"after sync MB".padStart(14)} ${"peak MB".padStart(8)}  restart: longest turn loading the state file`,
    ...runs.map(
      (r) =>
        `  ${String(r.services).padStart(12)} ${String(r.tcpOnly).padStart(9)} ${r.afterSyncMB.toFixed(0).padStart(14)} ${r.peakMB.toFixed(0).padStart(8)}  ${r.restartTurnsMs.map((ms) => ms.toFixed(0)).join(", ")} ms`,
    ),
  );
  const [first, last] = [runs[0]!, runs[SIZES.length - 1]!];
  if (last.services > first.services)
    lines.push(
      `  growth after sync: ${(((last.afterSyncMB - first.afterSyncMB) * 1024 * 1024) / ((last.services - first.services) * ENDPOINTS)).toFixed(0)} bytes per backend`,
    );
  return lines;
}

interface Run {
  services: number;
  tcpOnly: number;
  afterSyncMB: number;
  peakMB: number;
  /** The longest turn of the event loop in each restart's load of the state file. */
  restartTurnsMs: number[];
  lines: string[];
}

/** SIGTERM to the agent, and its exit (at once if it has exited). */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** RESTART_LOADS loads of the state file in `stateDir`, each by a fresh process (bench/state-load.ts). */
function restartLoads(
  stateDir: string,
): { bytes: number; backends: number; ms: number; longestTurnMs: number }[] {
  return Array.from({ length: RESTART_LOADS }, () => {
    const run = spawnSync(process.execPath, [STATE_LOAD, stateDir], {
      env: { ...process.env, ...AGENT_ENV },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (run.status !== 0) throw new Error(`state-load.js exited with ${run.status ?? run.signal}`);
    return JSON.parse(run.stdout) as { bytes: number; backends: number; ms: number; longestTurnMs: number };
  });
}

async function scaleRun(services: number, tcpOnly: number): Promise<Run> {
  const api = await StandInApiServer.start();
  const dir = await scratchDir("scale");
  const pins = join(dir.path, "pins");
  await mkdir(pins);
  const names =
    process.geteuid?.() === 0 ? Array.from({ length: PIN_NAMESPACES }, (_, i) => `scale${i}`) : [];
  for (let s = 0; s < services; s++) api.apply(serviceSlice(s));
  for (let s = 0; s < tcpOnly; s++) api.apply(tcpSlice(s));
  const kubeconfig = await api.writeKubeconfig(join(dir.path, "kubeconfig.json"));
  for (const name of names) addNetns(name, { dir: pins, loopbackUp: true }).close();
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...AGENT_FLAGS,
      BIN,
      "--kubeconfig",
      kubeconfig,
      "--state-dir",
      join(dir.path, "state"),
      "--listen",
      "127.0.0.1:0",
    ],
    {
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: "",
        ...AGENT_ENV,
        SOCKDIAG_AGENT_NETNS_DIRS: pins,
        SOCKDIAG_AGENT_NO_DISCOVER: "1",
        SOCKDIAG_AGENT_COALESCE_MS: "0",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const next = linesOf(child);
  try {
    const started = next("agent started");
    const synced = next("endpointslices synced");
    const url = `http://${(await started).listen as string}`;
    await synced;
    const readyS = (performance.now() - t0) / 1000;
    const stateFile = join(dir.path, "state", "backends.json");
    await until(() => existsSync(stateFile), 60_000, "the first state file");
    const loopMs = (await metric(url, "nodejs_eventloop_lag_max_seconds")) * 1000;
    const afterSync = memoryOf(child.pid!);
    // 1,000 updates of 1,000 Services: every other one replaces an endpoint (500 removals).
    for (let u = 0; u < UPDATES; u++) api.apply(serviceSlice(u % services, u % 2 === 0 ? 1 : 0));
    await until(
      async () => (await metric(url, "sockdiag_agent_removals_total")) === UPDATES / 2,
      60_000,
      "the updates' removals",
    );
    // Then one removal alone: one endpoint leaves a Service that the updates left alone.
    const batch = next("removal batch");
    const removedAt = performance.now();
    const s = services - 1;
    api.apply(udpSlice(`svc${s}-x`, `svc${s}`, 53, endpointsOf(s).slice(1), `ns${s % 100}`));
    const line = await batch;
    const removalS = (performance.now() - removedAt) / 1000;
    const afterUpdates = memoryOf(child.pid!);
    const backends = (line.backends as string[]).length;
    await stop(child);
    const restarts = restartLoads(join(dir.path, "state"));
    const restartTurnsMs = restarts.map((r) => r.longestTurnMs);
    const row = (label: string, value: number, goal: number, unit: string, digits = 0) =>
      `  ${label.padEnd(44)} ${value.toFixed(digits).padStart(7)} ${unit.padEnd(3)} goal <= ${goal} ${unit} ${value <= goal ? "" : "  (over)"}`;
    const beside = tcpOnly > 0 ? ` beside ${tcpOnly} TCP-only Services` : "";
    const lines = [
      `sockdiag-agent at scale: ${services} Services x ${ENDPOINTS} endpoints (${services * ENDPOINTS} endpoints)${beside}, the agent's bin as its own process (${AGENT_ENV.NODE_OPTIONS}, MALLOC_ARENA_MAX=${AGENT_ENV.MALLOC_ARENA_MAX}); Node ${process.version}`,
      row("ready (start to first list applied)", readyS, GOALS.readyS, "s", 1),
      row("RSS after sync", afterSync.rssMB, GOALS.rssAfterSyncMB, "MB"),
      row(`RSS after ${UPDATES} updates`, afterUpdates.rssMB, GOALS.peakMB, "MB"),
      row("peak RSS (VmHWM) by the end of the sync", afterSync.peakMB, GOALS.peakMB, "MB"),
      row(
        `peak RSS (VmHWM), batches in ${names.length + 1} netns incl.`,
        afterUpdates.peakMB,
        GOALS.peakMB,
        "MB",
      ),
      row("event-loop max delay, start to first save", loopMs, GOALS.loopDuringSyncMs, "ms"),
      row(`one removal (${backends} backends), event to batch end`, removalS, GOALS.removalS, "s", 2),
      row(
        `restart: longest turn loading the state file`,
        Math.max(...restartTurnsMs),
        GOALS.loopDuringSyncMs,
        "ms",
      ),
      `    ${restarts[0]!.backends} backends, ${(restarts[0]!.bytes / 1e6).toFixed(1)} MB; ${RESTART_LOADS} loads: longest turn ${restartTurnsMs.map((ms) => ms.toFixed(0)).join(", ")} ms, load ${restarts.map((r) => (r.ms / 1000).toFixed(1)).join(", ")} s`,
    ];
    return {
      services,
      tcpOnly,
      afterSyncMB: afterSync.rssMB,
      peakMB: afterUpdates.peakMB,
      restartTurnsMs,
      lines,
    };
  } finally {
    await stop(child);
    await api.close();
    for (const name of names) {
      try {
        removeNetns(name, { dir: pins });
      } catch {
        // Never made (setup failed part-way).
      }
    }
    // addNetns makes the pin directory a mount point of its own (as `ip netns` does).
    if (names.length > 0) spawnSync("umount", ["--lazy", pins], { stdio: "ignore" });
    await dir.remove();
  }
}
