/**
 * Destroying at scale, side by side with `ss -K`: 10,000 and 30,000 UDP sockets connected to one
 * destination, and 500, in a namespace that holds about 100,000 in all.
 */

import { destroySockets } from "../src/sockets/index.js";
import { fmt, median, recordGoal, row, runProcess } from "./measure.js";
import { CLI, openSpread, SOURCES, sceneNote, udpScene } from "./scene.js";

const BACKGROUND = 90_000;
const TARGET = { address: "127.0.0.10", port: 5353 };

/** Each figure is the median of this many runs, each on freshly opened targets. */
const RUNS = 3;

export async function benchDestroy(): Promise<string[]> {
  const out = [
    `destroy: UDP sockets connected to 127.0.0.10:5353 among ${BACKGROUND.toLocaleString("en-US")} others (medians of ${RUNS} runs, the three taken in turns)`,
    `  scene: ${sceneNote(BACKGROUND)}; each run's targets from ${SOURCES} source addresses of their own`,
  ];
  const scene = await udpScene("bench-destroy", BACKGROUND, TARGET, 0);
  const { name, path } = scene.netns;
  const dst = `${TARGET.address}:${TARGET.port}`;
  let round = 0;
  type Measure = () => { ms: number; destroyed: number };
  /**
   * Each measure RUNS times on `count` freshly opened targets, in turns (one of each per round, so
   * that a load change on the machine hits all alike): the median time of each.
   */
  const timedInTurns = async (count: number, measures: readonly Measure[]) => {
    const runs = measures.map((): { ms: number; destroyed: number }[] => []);
    for (let r = 0; r < RUNS; r++) {
      for (const [i, measure] of measures.entries()) {
        // Fresh targets each run, from source addresses no other run uses (127.NET.x.y).
        const targets = await openSpread(path, {
          total: count,
          target: TARGET,
          targetCount: count,
          sourceNet: 100 + round++,
        });
        try {
          runs[i]!.push(measure());
        } finally {
          await targets.stop();
        }
      }
    }
    return runs.map((xs) => ({
      ms: median(xs.map((x) => x.ms)),
      destroyed: Math.min(...xs.map((x) => x.destroyed)),
    }));
  };
  const countLines = (stdout: string) => stdout.split("\n").filter((l) => l.includes(dst)).length;
  try {
    for (const count of [500, 10_000, 30_000]) {
      out.push(`  -- ${count.toLocaleString("en-US")} to destroy`);
      const query = {
        netns: path,
        protocols: ["udp" as const],
        states: ["established"],
        filter: `dst ${dst}`,
      };
      const [ss, lib, kill] = (await timedInTurns(count, [
        () => {
          const r = runProcess("ss", ["-K", "-n", "-N", name, "-u", "dst", dst]);
          return { ms: r.ms, destroyed: countLines(r.stdout) };
        },
        () => {
          destroySockets({ ...query, dryRun: true }); // a long-lived caller's code is warm (JIT): so is this one
          const t0 = process.hrtime.bigint();
          const report = destroySockets(query);
          return { ms: Number(process.hrtime.bigint() - t0) / 1e6, destroyed: report.destroyed };
        },
        () => {
          const r = runProcess(process.execPath, [CLI, "kill", "-N", name, "-u", "-H", "dst", dst]);
          return { ms: r.ms, destroyed: countLines(r.stdout) };
        },
      ])) as [
        { ms: number; destroyed: number },
        { ms: number; destroyed: number },
        { ms: number; destroyed: number },
      ];
      out.push(
        row(
          `ss -K dst ${dst} (whole process; ${ss.destroyed} destroyed)`,
          fmt.ms(ss.ms),
          fmt.rate(ss.destroyed, ss.ms),
        ),
      );
      out.push(
        row(
          `destroySockets, in-process, after a dry run (${lib.destroyed} destroyed)`,
          fmt.ms(lib.ms),
          `${fmt.rate(lib.destroyed, lib.ms)}  ${fmt.ratio(lib.ms, ss.ms)} ss -K${count === 10_000 ? " (goal <= 0.5)" : ""}`,
        ),
      );
      const goal = count === 10_000 ? " (goal <= 1.3)" : count === 30_000 ? " (goal <= 0.6)" : "";
      if (count === 10_000)
        recordGoal("kill of 10,000 among 100,000 / ss -K, whole processes", kill.ms / ss.ms, 1.3);
      out.push(
        row(
          `sockdiag kill dst ${dst} (whole process; ${kill.destroyed} destroyed)`,
          fmt.ms(kill.ms),
          `${fmt.rate(kill.destroyed, kill.ms)}  ${fmt.ratio(kill.ms, ss.ms)} ss -K${goal}`,
        ),
      );
    }
  } finally {
    await scene.stop();
  }
  return out;
}
