/**
 * Destroying at scale, side by side with `ss -K`: 10,000 and 30,000 UDP sockets connected to one
 * destination, and 500, in a namespace that holds about 100,000 in all.
 */

import { destroySockets } from "../src/sockets/index.js";
import { Holder } from "../test/kit/index.js";
import { fmt, row, runProcess } from "./measure.js";
import { CLI, udpScene } from "./scene.js";

const BACKGROUND = 90_000;
const TARGET = { address: "127.0.0.10", port: 5353 };
const PER_HOLDER = 15_000;

/** Open `count` sockets connected to TARGET, from source addresses no other round uses. */
async function openTargets(nsPath: string, count: number, round: number): Promise<Holder[]> {
  const holders: Holder[] = [];
  for (let h = 0; h * PER_HOLDER < count; h++) {
    const holder = await Holder.start({ netnsPath: nsPath });
    holders.push(holder);
    const n = Math.min(PER_HOLDER, count - h * PER_HOLDER);
    await holder.open(
      {
        kind: "udp",
        bind: { address: `127.${100 + round}.${h}.1`, port: { from: 1024, to: 1024 + n - 1 } },
        connect: TARGET,
      },
      n,
    );
  }
  return holders;
}

async function stopAll(holders: Holder[]): Promise<void> {
  await Promise.all(holders.map((h) => h.stop()));
}

export async function benchDestroy(): Promise<string[]> {
  const out = [
    `destroy: UDP sockets connected to ${TARGET.address}:${TARGET.port} among ${BACKGROUND.toLocaleString("en-US")} others`,
  ];
  const scene = await udpScene("bench-destroy", BACKGROUND, TARGET, 0);
  const { name, path } = scene.netns;
  const dst = `${TARGET.address}:${TARGET.port}`;
  let round = 0;
  try {
    for (const count of [500, 10_000, 30_000]) {
      out.push(`  -- ${count.toLocaleString("en-US")} to destroy`);
      let holders = await openTargets(path, count, round++);
      const ss = runProcess("ss", ["-K", "-n", "-N", name, "-u", "dst", dst]);
      const ssKilled = ss.stdout.split("\n").filter((l) => l.includes(dst)).length;
      await stopAll(holders);
      out.push(
        row(
          `ss -K dst ${dst} (whole process; ${ssKilled} destroyed)`,
          fmt.ms(ss.ms),
          fmt.rate(ssKilled, ss.ms),
        ),
      );

      holders = await openTargets(path, count, round++);
      const t0 = process.hrtime.bigint();
      const report = destroySockets({
        netns: path,
        protocols: ["udp"],
        states: ["established"],
        filter: `dst ${dst}`,
      });
      const lib = Number(process.hrtime.bigint() - t0) / 1e6;
      await stopAll(holders);
      out.push(
        row(
          `destroySockets, in-process, after a dry run (${report.destroyed} destroyed)`,
          fmt.ms(lib),
          `${fmt.rate(report.destroyed, lib)}  ${fmt.ratio(lib, ss.ms)} ss -K${count === 10_000 ? " (goal <= 0.5)" : ""}`,
        ),
      );

      holders = await openTargets(path, count, round++);
      const kill = runProcess(process.execPath, [CLI, "kill", "-N", name, "-u", "-H", "dst", dst]);
      const killed = kill.stdout.split("\n").filter((l) => l.includes(dst)).length;
      await stopAll(holders);
      const goal = count === 10_000 ? " (goal <= 1.3)" : count === 30_000 ? " (goal <= 0.6)" : "";
      out.push(
        row(
          `sockdiag kill dst ${dst} (whole process; ${killed} destroyed)`,
          fmt.ms(kill.ms),
          `${fmt.rate(killed, kill.ms)}  ${fmt.ratio(kill.ms, ss.ms)} ss -K${goal}`,
        ),
      );
    }
  } finally {
    await scene.stop();
  }
  return out;
}
