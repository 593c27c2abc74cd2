/**
 * Deleting conntrack entries at scale, side by side with `conntrack -D`: 10,000 UDP entries DNATed
 * to one backend (reply source 10.63.0.5:5353) among 50,000, in a throwaway namespace. The table is
 * refilled before every run; each figure is the median of RUNS runs.
 */
import { deleteConntrack } from "../src/conntrack/index.js";
import type { TestEntry } from "../test/ctnl/ct-layout.js";
import { conntrackTool, createNetns, insertConntrack } from "../test/kit/index.js";
import { fmt, median, row, runProcess } from "./measure.js";
import { CLI } from "./scene.js";

const TOTAL = 50_000;
const MATCHING = 10_000;
const BACKEND = { address: "10.63.0.5", port: 5353 };
const RUNS = 3;

/** `total` UDP entries; every fifth one is DNATed to BACKEND, the others to four other backends. */
function table(total = TOTAL): TestEntry[] {
  const out: TestEntry[] = [];
  for (let i = 0; i < total; i++) {
    const src = `10.64.${(i >> 8) & 255}.${i & 255}`;
    const backend = i % 5 === 0 ? BACKEND.address : `10.63.0.${6 + (i % 5)}`;
    out.push({
      proto: 17,
      orig: { src, dst: "10.96.0.10", sport: 10000 + (i % 50000), dport: 53 },
      reply: { src: backend, dst: src, sport: BACKEND.port, dport: 10000 + (i % 50000) },
    });
  }
  return out;
}

export async function benchConntrack(): Promise<string[]> {
  const out = [
    `conntrack: delete the ${MATCHING.toLocaleString("en-US")} UDP entries DNATed to ${BACKEND.address}:${BACKEND.port} among ${TOTAL.toLocaleString("en-US")} (median of ${RUNS} runs)`,
  ];
  const ns = await createNetns("bench-ct");
  const entries = table();
  const refill = async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, entries);
  };
  const timed = async (measure: () => { ms: number; deleted: number }) => {
    const runs: { ms: number; deleted: number }[] = [];
    for (let r = 0; r < RUNS; r++) {
      await refill();
      runs.push(measure());
    }
    return { ms: median(runs.map((x) => x.ms)), deleted: Math.min(...runs.map((x) => x.deleted)) };
  };
  const selection = ["-p", "udp", "--reply-src", BACKEND.address, "--reply-port-src", String(BACKEND.port)];
  const ours = ["-p", "udp", "--reply-src", `${BACKEND.address}:${BACKEND.port}`];
  try {
    const tool = await timed(() => {
      const r = runProcess("ip", ["netns", "exec", ns.name, "conntrack", "-D", ...selection]);
      const deleted = Number(/(\d+) flow entries have been deleted/.exec(r.stderr)?.[1] ?? 0);
      return { ms: r.ms, deleted };
    });
    out.push(
      row(
        `conntrack -D (whole process; ${tool.deleted} deleted)`,
        fmt.ms(tool.ms),
        fmt.rate(tool.deleted, tool.ms),
      ),
    );

    const query = {
      netns: ns.path,
      protocol: "udp" as const,
      reply: { src: BACKEND.address, sport: BACKEND.port },
    };
    const lib = await timed(() => {
      deleteConntrack({ ...query, dryRun: true }); // a long-lived caller's code is warm (JIT): so is this one
      const t0 = process.hrtime.bigint();
      const report = deleteConntrack(query);
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6, deleted: report.deleted };
    });
    const dry = await timed(() => {
      const t0 = process.hrtime.bigint();
      const report = deleteConntrack({ ...query, dryRun: true });
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6, deleted: report.matched };
    });
    out.push(
      row(
        `deleteConntrack, in-process, after a dry run (${lib.deleted} deleted)`,
        fmt.ms(lib.ms),
        `${fmt.rate(lib.deleted, lib.ms)}  ${fmt.ratio(lib.ms, tool.ms)} conntrack -D (goal <= 0.5)`,
      ),
    );

    out.push(row(`  of which the filtered dump alone (a dry run: ${dry.deleted} matched)`, fmt.ms(dry.ms)));

    const cli = await timed(() => {
      // Like conntrack -D, it prints every entry it deleted.
      const r = runProcess("ip", [
        "netns",
        "exec",
        ns.name,
        process.execPath,
        CLI,
        "conntrack",
        "rm",
        ...ours,
      ]);
      const deleted = Number(/(\d+) deleted/.exec(r.stderr)?.[1] ?? 0);
      return { ms: r.ms, deleted };
    });
    out.push(
      row(
        `sockdiag conntrack rm (whole process; ${cli.deleted} deleted)`,
        fmt.ms(cli.ms),
        `${fmt.rate(cli.deleted, cli.ms)}  ${fmt.ratio(cli.ms, tool.ms)} conntrack -D`,
      ),
    );
  } finally {
    await ns.remove();
  }
  out.push(...(await cliMemory()));
  return out;
}

/**
 * The CLI's peak memory deleting a fifth of a small table and of a large one (GNU time's maximum
 * resident set): what it prints goes out as it deletes, so the large table costs little more.
 */
async function cliMemory(): Promise<string[]> {
  const peaks: number[] = [];
  const sizes = [2_000, 200_000];
  for (const size of sizes) {
    const ns = await createNetns("bench-ct-mem");
    try {
      insertConntrack(ns.path, table(size));
      const r = runProcess("ip", [
        ...["netns", "exec", ns.name, "/usr/bin/time", "-f", "%M", process.execPath, CLI, "conntrack", "rm"],
        ...["-p", "udp", "--reply-src", `${BACKEND.address}:${BACKEND.port}`],
      ]);
      peaks.push(Number(/(\d+)\s*$/.exec(r.stderr)?.[1] ?? Number.NaN) / 1024);
    } finally {
      await ns.remove();
    }
  }
  const [small, large] = peaks as [number, number];
  return [
    row(
      `sockdiag conntrack rm, peak memory: ${sizes[0]! / 5} of ${sizes[0]} entries, then ${sizes[1]! / 5} of ${sizes[1]}`,
      `${small.toFixed(0)} MB, ${large.toFixed(0)} MB`,
      `+${(large - small).toFixed(0)} MB (goal <= +10 MB)`,
    ),
  ];
}
