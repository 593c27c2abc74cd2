/**
 * What the machine costs, beside the figures that depend on it: the machine line every run starts
 * and ends with, the process's page faults (/proc/self/stat), and the collections' time (perf_hooks
 * "gc" entries) within timed windows.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { constants, PerformanceObserver } from "node:perf_hooks";

/** CPU model, core count, Node version and load average: a reader can tell the machine from the code. */
export function machineLine(): string {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? "unknown CPU";
  const cores = cpuinfo.match(/^processor\s*:/gm)?.length ?? 0;
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  return `machine: ${model}, ${cores} cores; Node ${process.version}; load average ${load}`;
}

/** Page faults so far: this process's, and those of the children it has waited for. */
export interface PageFaults {
  minor: number;
  major: number;
  childMinor: number;
  childMajor: number;
}

/** /proc/self/stat minflt, cminflt, majflt, cmajflt (fields 10–13, proc(5)). */
export function pageFaults(): PageFaults {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Field 2 (comm) is in parentheses and may hold spaces: count from the last ")".
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // f[0] is field 3 (state), so field n is f[n - 3].
  return { minor: Number(f[7]), childMinor: Number(f[8]), major: Number(f[9]), childMajor: Number(f[10]) };
}

/** `b - a`, field by field. */
export function faultsSince(a: PageFaults, b: PageFaults = pageFaults()): PageFaults {
  return {
    minor: b.minor - a.minor,
    major: b.major - a.major,
    childMinor: b.childMinor - a.childMinor,
    childMajor: b.childMajor - a.childMajor,
  };
}

/** A window of performance.now() time. */
export interface Window {
  start: number;
  end: number;
}

/** One collection: when it started, how long it took, whether gc() forced it. */
interface Collection extends Window {
  forced: boolean;
}

/**
 * Run `fn` (sync or async) while recording every collection, and return its result with a function
 * that sums the collections' milliseconds within given windows (forced ones, the bench's own gc()
 * calls, left out). Node queues each entry in one turn of the event loop and calls the observer in
 * the next, so this awaits two turns before it stops observing.
 */
export async function withCollections<T>(
  fn: () => T | Promise<T>,
): Promise<{ result: T; gcMs: (windows: readonly Window[]) => number }> {
  const seen: Collection[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const flags = (e as { detail?: { flags?: number } }).detail?.flags ?? 0;
      seen.push({
        start: e.startTime,
        end: e.startTime + e.duration,
        forced: (flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0,
      });
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  try {
    const result = await fn();
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    return {
      result,
      gcMs: (windows) =>
        seen
          .filter((c) => !c.forced && windows.some((w) => c.start >= w.start && c.start < w.end))
          .reduce((sum, c) => sum + (c.end - c.start), 0),
    };
  } finally {
    observer.disconnect();
  }
}

/**
 * Nanoseconds one minor page fault costs here: the first write to each page of 64 MB of new memory
 * (the kernel maps and zeroes each page as it is first touched, as it does for a young generation
 * growing into fresh pages).
 */
export function pageFaultCost(): number {
  const pages = new Uint8Array(64 << 20);
  const before = pageFaults();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < pages.length; i += 4096) pages[i] = 1;
  const ns = Number(process.hrtime.bigint() - t0);
  const faults = faultsSince(before).minor;
  return faults > 0 ? ns / faults : 0;
}
