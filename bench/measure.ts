/** Timing helpers for the benchmarks: medians of repeated runs, whole processes, allocation per op. */
import { spawnSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { faultsSince, machineLine, type PageFaults, pageFaults, type Window } from "./machine.js";

/** Median of the values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Milliseconds one call of fn takes, median of `runs` runs (after one warm-up). */
export function timeFn(fn: () => unknown, runs = 5): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

/** What timeInTurns measured of one function: its median, its mean and its collections' mean. */
export interface TurnTimes {
  median: number;
  mean: number;
  /** Milliseconds of garbage collection (perf_hooks "gc" entries) within a round, on average. */
  gcMean: number;
  /** This process's page faults (minor + major) within a round, on average. */
  faultsMean: number;
}

/**
 * Each function timed in turns, one of each per round, for `rounds` rounds after `warmups`
 * untimed ones: the JIT and the young generation settle first, a load change hits all alike, and
 * a collection that lands in some rounds only shows in the mean and the gc figure as much as it
 * does in a long-running caller.
 */
export async function timeInTurns(
  fns: readonly (() => unknown)[],
  rounds = 15,
  warmups = 3,
): Promise<TurnTimes[]> {
  for (let i = 0; i < warmups; i++) for (const fn of fns) fn();
  const gcs: { start: number; end: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  observer.observe({ entryTypes: ["gc"] });
  const windows = fns.map((): { start: number; end: number }[] => []);
  const faults = fns.map(() => 0);
  for (let i = 0; i < rounds; i++) {
    fns.forEach((fn, f) => {
      const before = pageFaults();
      const start = performance.now();
      fn();
      windows[f]!.push({ start, end: performance.now() });
      const d = faultsSince(before);
      faults[f]! += d.minor + d.major;
    });
  }
  // Node queues each collection's entry in one turn of the event loop and calls the observer in the next.
  for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
  observer.disconnect();
  return windows.map((w, f) => {
    const times = w.map((r) => r.end - r.start);
    const gcTime = gcs
      .filter((g) => w.some((r) => g.start >= r.start && g.start < r.end))
      .reduce((sum, g) => sum + (g.end - g.start), 0);
    return {
      median: median(times),
      mean: times.reduce((a, b) => a + b, 0) / times.length,
      gcMean: gcTime / rounds,
      faultsMean: faults[f]! / rounds,
    };
  });
}

/**
 * The environment of every timed process: this one's without NODE_EXTRA_CA_CERTS, which Node 20
 * reads and parses eagerly at start-up (Node 22 and later only when TLS first needs it).
 */
export const TIMED_ENV: NodeJS.ProcessEnv = (() => {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
})();

/** What the bench says about the machine and the timed processes' environment, first and last. */
export function environmentNote(): string {
  const was = process.env.NODE_EXTRA_CA_CERTS === undefined ? "was not set" : "was set here";
  return `${machineLine()}\nevery timed process runs with NODE_EXTRA_CA_CERTS unset (it ${was})`;
}

/** A command line to time as a whole process. */
export type Command = readonly [command: string, ...args: string[]];

/**
 * Milliseconds each whole process takes with stdout to /dev/null, median of `runs`, run in turns
 * (one of each per round) so that a load change on the machine hits all of them alike; throws if
 * one fails.
 */
export function timeProcesses(commands: readonly Command[], runs = 7): number[] {
  return timeProcessesWithFaults(commands, runs).map((p) => p.ms);
}

/**
 * timeProcesses, with each process's page faults beside its time (medians; read from this
 * process's cminflt and cmajflt, which count the children it has waited for).
 */
export function timeProcessesWithFaults(
  commands: readonly Command[],
  runs = 7,
): { ms: number; faults: number }[] {
  const devnull = openSync("/dev/null", "w");
  try {
    const times = commands.map((): number[] => []);
    const faults = commands.map((): number[] => []);
    for (let i = 0; i < runs; i++) {
      commands.forEach(([command, ...args], c) => {
        const before = pageFaults();
        const t0 = process.hrtime.bigint();
        const r = spawnSync(command, args, { stdio: ["ignore", devnull, "pipe"], env: TIMED_ENV });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
        const d = faultsSince(before);
        times[c]!.push(ms);
        faults[c]!.push(d.childMinor + d.childMajor);
      });
    }
    return times.map((t, c) => ({ ms: median(t), faults: median(faults[c]!) }));
  } finally {
    closeSync(devnull);
  }
}

/** Milliseconds a whole process takes with stdout to /dev/null, median of `runs`; throws if it fails. */
export function timeProcess(command: string, args: readonly string[], runs = 5): number {
  return timeProcesses([[command, ...args]], runs)[0]!;
}

/** Run a whole process once and return its duration in ms and its output. */
export function runProcess(
  command: string,
  args: readonly string[],
): { ms: number; stdout: string; stderr: string; status: number | null } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(command, args, { encoding: "utf8", maxBuffer: 1 << 30, env: TIMED_ENV });
  return {
    ms: Number(process.hrtime.bigint() - t0) / 1e6,
    stdout: r.stdout,
    stderr: r.stderr,
    status: r.status,
  };
}

declare const gc: (() => void) | undefined;

/** What perOp measured: time and allocation per op, its timed window and its page faults. */
export interface PerOp {
  nsPerOp: number;
  bytesPerOp: number;
  /** The timed calls' window, in performance.now() time (for withCollections). */
  window: Window;
  /** This process's page faults during the timed calls. */
  faults: PageFaults;
}

/**
 * ns/op and bytes/op of fn, over `ops` calls. Allocation is read from the heap growth with a
 * collection before and none during (run node with --expose-gc and a young generation large
 * enough for `ops` calls: --max-semi-space-size=128). Without `collectFirst`, bytes/op means
 * nothing, but the young generation keeps the pages it has (a full collection gives them back).
 */
export function perOp(fn: (i: number) => void, ops: number, collectFirst = true): PerOp {
  for (let i = 0; i < Math.min(ops, 10_000); i++) fn(i); // warm up the JIT
  if (collectFirst && typeof gc === "function") gc();
  const before = process.memoryUsage().heapUsed;
  const faults = pageFaults();
  const start = performance.now();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) fn(i);
  const ns = Number(process.hrtime.bigint() - t0);
  const end = performance.now();
  const after = process.memoryUsage().heapUsed;
  return {
    nsPerOp: ns / ops,
    bytesPerOp: Math.max(0, after - before) / ops,
    window: { start, end },
    faults: faultsSince(faults),
  };
}

/** One of the issue's goals as measured in this run: label, value and limit, for the closing summary. */
export interface Goal {
  label: string;
  value: number;
  limit: number;
  unit: string;
}

const goals: Goal[] = [];

/** Remember a goal's figure for the summary `npm run bench` ends with. */
export function recordGoal(label: string, value: number, limit: number, unit = "x"): void {
  goals.push({ label, value, limit, unit });
}

/** The goals measured in this run, one line each, met or not. */
export function goalSummary(): string[] {
  if (goals.length === 0) return [];
  return [
    "goals (this run)",
    ...goals.map(
      (g) =>
        `  ${g.label.padEnd(58)} ${`${g.value.toFixed(2)} ${g.unit}`.padStart(14)}  goal <= ${g.limit} ${g.unit}: ${g.value <= g.limit ? "met" : "NOT met"}`,
    ),
  ];
}

/** Format a row of a results table. */
export function row(label: string, value: string, note = ""): string {
  return `  ${label.padEnd(58)} ${value.padStart(14)}  ${note}`;
}

export const fmt = {
  ms: (ms: number) => `${ms.toFixed(1)} ms`,
  rate: (n: number, ms: number) => `${Math.round((n / ms) * 1000).toLocaleString("en-US")}/s`,
  ratio: (a: number, b: number) => `${(a / b).toFixed(2)} x`,
  perItem: (ms: number, n: number) => `${((ms * 1000) / n).toFixed(2)} us`,
};
