/**
 * Deleting conntrack entries at scale, side by side with `conntrack -D`, in a throwaway namespace:
 * the UDP entries DNATed to one removed backend (reply source 10.63.0.5:5353) among 50,000 and
 * among 1,000,000 (nf_conntrack_max raised for the run, then restored). Each round runs every row
 * once, in turns, and puts back what it deleted; each figure is the median of the rounds. Beside
 * the rows: the kernel's floor (the same filtered dump, raw netlink, nothing decoded), each row's
 * CPU time (user + system: what the load of a shared machine changes least), and the CLI's peak
 * memory as the table grows.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { deleteConntrack } from "../src/conntrack/index.js";
import { planConntrack } from "../src/conntrack/query.js";
import { CT_NEW, NETLINK_NETFILTER, writeDumpRequest } from "../src/ctnl/index.js";
import { DumpCursor, MessageWriter } from "../src/netlink/index.js";
import { fromPath, openNetlinkIn } from "../src/netns/index.js";
import type { TestEntry } from "../test/ctnl/ct-layout.js";
import { createNetns, insertConntrack, type ScratchNetns } from "../test/kit/index.js";
import { faultsSince, pageFaults, type Window, withCollections } from "./machine.js";
import { fmt, median, recordGoal, row, runProcess } from "./measure.js";
import { CLI } from "./scene.js";

const BACKEND = { address: "10.63.0.5", port: 5353 };
const CONNTRACK_MAX = "/proc/sys/net/netfilter/nf_conntrack_max";
/** Entries built and inserted at a time, so that filling a million holds few objects at once. */
const FILL_CHUNK = 20_000;
const TOOL_SELECTION = [
  "-p",
  "udp",
  "--reply-src",
  BACKEND.address,
  "--reply-port-src",
  String(BACKEND.port),
];
const CLI_SELECTION = ["-p", "udp", "--reply-src", `${BACKEND.address}:${BACKEND.port}`];

/** A table of `total` UDP entries; every `every`-th is DNATed to BACKEND. */
interface Scene {
  total: number;
  every: number;
  rounds: number;
}

const SCENES: Scene[] = [
  { total: 50_000, every: 5, rounds: 3 },
  { total: 1_000_000, every: 100, rounds: 5 },
];

/**
 * Entry i: a client of one of 16 service addresses (10.64.0.0 upwards, a port each), DNATed to
 * BACKEND when i is a multiple of `every`, else to one of 1,600 other backends on 700 ports.
 */
function entryAt(i: number, every: number): TestEntry {
  const src = `10.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
  const sport = 10000 + (i % 50000);
  const removed = i % every === 0;
  return {
    proto: 17,
    orig: { src, dst: `10.96.${(i >> 4) & 15}.${10 + (i & 15)}`, sport, dport: 53 },
    reply: {
      src: removed ? BACKEND.address : `10.63.${(i >> 8) & 7}.${6 + (i % 200)}`,
      dst: src,
      sport: removed ? BACKEND.port : 5000 + (i % 700),
      dport: sport,
    },
  };
}

/** Insert entries [from, to) of the scene, or only its removed backend's with `removedOnly`. */
function fill(ns: ScratchNetns, scene: Scene, removedOnly = false): void {
  const step = removedOnly ? scene.every : 1;
  for (let from = 0; from < scene.total; from += FILL_CHUNK) {
    const chunk: TestEntry[] = [];
    for (let i = from; i < Math.min(scene.total, from + FILL_CHUNK); i += step)
      chunk.push(entryAt(i, scene.every));
    insertConntrack(ns.path, chunk);
  }
}

/** nf_conntrack_max at least `needed` while `fn` runs (it is one for every namespace), then as it was. */
async function withConntrackMax<T>(needed: number, fn: () => Promise<T>): Promise<T> {
  const was = readFileSync(CONNTRACK_MAX, "utf8").trim();
  if (Number(was) < needed) writeFileSync(CONNTRACK_MAX, String(needed));
  try {
    return await fn();
  } finally {
    writeFileSync(CONNTRACK_MAX, was);
  }
}

/** One measured run of a row. */
interface Run {
  ms: number;
  /** Entries deleted (or, for the floor, dumped). */
  count: number;
  /** CPU time, user and system (a whole process's, or this process's during the run). */
  cpuMs: number;
  /** Minor and major page faults. */
  faults: number;
  /** Peak resident set, MB (whole processes only). */
  peakMb?: number;
  /** The run's window, for its collections (in-process only). */
  window?: Window;
}

/** `command` run inside the namespace under GNU time: its duration, peak memory and page faults. */
function processRun(ns: ScratchNetns, command: string[], deleted: RegExp): Run {
  const r = runProcess("ip", ["netns", "exec", ns.name, "/usr/bin/time", "-f", "%U %S %M %R %F", ...command]);
  if (r.status !== 0) throw new Error(`${command.join(" ")} exited ${r.status}: ${r.stderr}`);
  const [user, system, kb, minor, major] = (/([\d.]+) ([\d.]+) (\d+) (\d+) (\d+)\s*$/.exec(r.stderr) ?? [])
    .slice(1)
    .map(Number);
  return {
    ms: r.ms,
    cpuMs: ((user ?? Number.NaN) + (system ?? Number.NaN)) * 1000,
    count: Number(deleted.exec(r.stderr)?.[1] ?? 0),
    faults: (minor ?? Number.NaN) + (major ?? Number.NaN),
    peakMb: (kb ?? Number.NaN) / 1024,
  };
}

/** `fn` timed in this process, with its page faults and window. */
function inProcess(fn: () => number): Run {
  const before = pageFaults();
  const cpu = process.cpuUsage();
  const start = performance.now();
  const count = fn();
  const end = performance.now();
  const { user, system } = process.cpuUsage(cpu);
  const d = faultsSince(before);
  return {
    ms: end - start,
    cpuMs: (user + system) / 1000,
    count,
    faults: d.minor + d.major,
    window: { start, end },
  };
}

/** The kernel's part alone: the filtered dump deleteConntrack asks for, received and not decoded. */
function rawDump(path: string, query: Parameters<typeof planConntrack>[0]): number {
  using ns = fromPath(path);
  using conn = openNetlinkIn(ns, NETLINK_NETFILTER);
  let count = 0;
  for (const filter of planConntrack(query).filters) {
    const w = new MessageWriter(Buffer.alloc(256));
    const seq = conn.nextSeq();
    writeDumpRequest(w, seq, filter);
    conn.send(w.buf, w.length);
    using cursor = new DumpCursor(conn, seq, "conntrack dump");
    while (cursor.next()) if (cursor.type === CT_NEW) count++;
  }
  return count;
}

/** A row's figures: medians over the rounds (gc: the mean per round, in-process rows only). */
function summary(runs: Run[], gcMs?: (w: readonly Window[]) => number) {
  const windows = runs.flatMap((r) => (r.window ? [r.window] : []));
  return {
    ms: median(runs.map((r) => r.ms)),
    cpuMs: median(runs.map((r) => r.cpuMs)),
    count: Math.min(...runs.map((r) => r.count)),
    faults: median(runs.map((r) => r.faults)),
    peakMb: runs[0]?.peakMb === undefined ? undefined : median(runs.map((r) => r.peakMb!)),
    gcMs: gcMs && windows.length > 0 ? gcMs(windows) / windows.length : undefined,
  };
}

function costs(s: ReturnType<typeof summary>): string {
  const parts = [`cpu ${s.cpuMs.toFixed(0)} ms`, `faults ${Math.round(s.faults).toLocaleString("en-US")}`];
  if (s.gcMs !== undefined) parts.push(`gc ${s.gcMs.toFixed(1)} ms`);
  if (s.peakMb !== undefined) parts.push(`peak ${s.peakMb.toFixed(0)} MB`);
  return parts.join(", ");
}

async function sceneRows(scene: Scene): Promise<{ lines: string[]; cliPeakMb: number }> {
  const matching = Math.ceil(scene.total / scene.every);
  const lines = [
    `conntrack: delete the ${n(matching)} UDP entries DNATed to ${BACKEND.address}:${BACKEND.port} among ${n(scene.total)} (median of ${scene.rounds} rounds, in turns; load ${loadLine()})`,
  ];
  const ns = await createNetns("bench-ct");
  try {
    fill(ns, scene);
    const query = {
      netns: ns.path,
      protocol: "udp" as const,
      reply: { src: BACKEND.address, sport: BACKEND.port },
    };
    deleteConntrack({ ...query, dryRun: true }); // a long-lived caller's code is warm (JIT): so is this one
    const runs = { tool: [] as Run[], cli: [] as Run[], lib: [] as Run[], floor: [] as Run[] };
    const { gcMs } = await withCollections(() => {
      for (let r = 0; r < scene.rounds; r++) {
        runs.tool.push(
          processRun(ns, ["conntrack", "-D", ...TOOL_SELECTION], /(\d+) flow entries have been deleted/),
        );
        fill(ns, scene, true);
        // Like conntrack -D, it prints every entry it deleted.
        runs.cli.push(
          processRun(ns, [process.execPath, CLI, "conntrack", "rm", ...CLI_SELECTION], /(\d+) deleted/),
        );
        fill(ns, scene, true);
        runs.lib.push(inProcess(() => deleteConntrack(query).deleted));
        fill(ns, scene, true);
        runs.floor.push(inProcess(() => rawDump(ns.path, query)));
      }
    });
    const tool = summary(runs.tool);
    const cli = summary(runs.cli);
    const lib = summary(runs.lib, gcMs);
    const floor = summary(runs.floor, gcMs);
    const big = scene.total >= 1_000_000;
    const libGoal = big ? 0.3 : 0.5;
    if (big)
      recordGoal(
        `conntrack: deleteConntrack vs conntrack -D at ${n(scene.total)}`,
        lib.ms / tool.ms,
        libGoal,
      );
    lines.push(
      row(
        `conntrack -D (whole process; ${n(tool.count)} deleted)`,
        fmt.ms(tool.ms),
        `${fmt.rate(tool.count, tool.ms)}  ${costs(tool)}`,
      ),
      row(
        `sockdiag conntrack rm (whole process; ${n(cli.count)} deleted)`,
        fmt.ms(cli.ms),
        `${fmt.ratio(cli.ms, tool.ms)} conntrack -D  ${costs(cli)}`,
      ),
      row(
        `deleteConntrack, in-process (${n(lib.count)} deleted)`,
        fmt.ms(lib.ms),
        `${fmt.ratio(lib.ms, tool.ms)} conntrack -D (goal <= ${libGoal}; cpu ${fmt.ratio(lib.cpuMs, tool.cpuMs)}), ${fmt.ratio(lib.ms, floor.ms)} the floor  ${costs(lib)}`,
      ),
      row(
        `  the floor: the same filtered dump alone (raw, ${n(floor.count)} listed)`,
        fmt.ms(floor.ms),
        `${fmt.ratio(floor.ms, tool.ms)} conntrack -D  ${costs(floor)}`,
      ),
    );
    return { lines, cliPeakMb: cli.peakMb ?? Number.NaN };
  } finally {
    await ns.remove();
  }
}

const n = (x: number) => x.toLocaleString("en-US");

function loadLine(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

export async function benchConntrack(): Promise<string[]> {
  const largest = Math.max(...SCENES.map((s) => s.total));
  return withConntrackMax(largest + 100_000, async () => {
    const out: string[] = [];
    let largestPeak = "";
    for (const scene of SCENES) {
      const { lines, cliPeakMb } = await sceneRows(scene);
      out.push(...lines, "");
      if (scene.total === largest)
        largestPeak = `${n(Math.ceil(scene.total / scene.every))} of ${n(scene.total)}: ${cliPeakMb.toFixed(0)} MB`;
    }
    out.push(...(await cliMemory(largestPeak)));
    return out;
  });
}

/**
 * The CLI's peak memory (GNU time's maximum resident set) deleting a fifth of a small table and of
 * a large one, and the removed backend's share of the largest scene: what it prints goes out as it
 * deletes and a batch holds bytes, not objects, so the large table costs little more.
 */
async function cliMemory(largestPeak: string): Promise<string[]> {
  const sizes = [2_000, 200_000];
  const peaks: number[] = [];
  for (const total of sizes) {
    const ns = await createNetns("bench-ct-mem");
    try {
      fill(ns, { total, every: 5, rounds: 1 });
      const r = processRun(ns, [process.execPath, CLI, "conntrack", "rm", ...CLI_SELECTION], /(\d+) deleted/);
      peaks.push(r.peakMb!);
    } finally {
      await ns.remove();
    }
  }
  const [small, large] = peaks as [number, number];
  recordGoal("conntrack rm peak memory, 200,000 entries vs 2,000", large - small, 10, "MB");
  return [
    row(
      `sockdiag conntrack rm, peak memory: ${n(sizes[0]! / 5)} of ${n(sizes[0]!)}, ${n(sizes[1]! / 5)} of ${n(sizes[1]!)}`,
      `${small.toFixed(0)}, ${large.toFixed(0)} MB`,
      `+${(large - small).toFixed(1)} MB (goal <= +10 MB); ${largestPeak}`,
    ),
  ];
}
