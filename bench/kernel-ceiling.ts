/**
 * How far the kernel itself lets UDP dumps over many namespaces spread over cores: the dumps alone
 * (bench/raw-dumps.ts), the namespaces split between two processes as the pool splits them (every
 * other one), run at once on every core and then pinned to one. In a table the namespaces share,
 * every dump walks every socket of every namespace, taking each bucket's lock, so two dumps at
 * once contend for the same memory and locks: their ratio bounds what any pool can get.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { median } from "./measure.js";

const SCRIPT = fileURLToPath(new URL("./raw-dumps.js", import.meta.url));

interface Round {
  start: number;
  end: number;
  sockets: number;
}

/** Processes that dump their share of the namespaces, each round at once. */
class DumpGroup {
  private readonly children: ChildProcess[];
  private readonly lines: AsyncIterator<string>[];

  constructor(shares: readonly string[][], pinnedToOneCore: boolean) {
    this.children = shares.map((paths) =>
      pinnedToOneCore
        ? spawn("taskset", ["-c", "0", process.execPath, SCRIPT, ...paths], {
            stdio: ["pipe", "pipe", "inherit"],
          })
        : spawn(process.execPath, [SCRIPT, ...paths], { stdio: ["pipe", "pipe", "inherit"] }),
    );
    this.lines = this.children.map((c) => createInterface({ input: c.stdout! })[Symbol.asyncIterator]());
  }

  /** Wall milliseconds from the first start to the last end of one round, and the sockets received. */
  async round(): Promise<{ ms: number; sockets: number }> {
    for (const c of this.children) c.stdin!.write("\n");
    const rounds = await Promise.all(
      this.lines.map(async (l) => {
        const next = await l.next();
        if (next.done) throw new Error("a raw-dumps process ended early");
        return JSON.parse(next.value) as Round;
      }),
    );
    return {
      ms: Math.max(...rounds.map((r) => r.end)) - Math.min(...rounds.map((r) => r.start)),
      sockets: rounds.reduce((sum, r) => sum + r.sockets, 0),
    };
  }

  stop(): void {
    for (const c of this.children) c.stdin!.end();
  }
}

/** What the raw dumps took: one process, two on every core, two pinned to one core (medians). */
export interface KernelCeiling {
  serialMs: number;
  twoMs: number;
  pinnedMs: number;
  sockets: number;
}

/** The raw dumps over `paths` (undefined: the caller's own namespace), `rounds` rounds in turns. */
export async function kernelCeiling(paths: readonly string[], rounds = 5): Promise<KernelCeiling> {
  const halves = [paths.filter((_, i) => i % 2 === 0), paths.filter((_, i) => i % 2 === 1)];
  const groups = [
    new DumpGroup([[...paths]], false),
    new DumpGroup(halves, false),
    new DumpGroup(halves, true),
  ];
  try {
    for (const g of groups) await g.round(); // warm-up
    const times = groups.map((): number[] => []);
    let sockets = 0;
    for (let r = 0; r < rounds; r++)
      for (const [i, g] of groups.entries()) {
        const round = await g.round();
        times[i]!.push(round.ms);
        sockets = round.sockets;
      }
    const [serialMs, twoMs, pinnedMs] = times.map(median) as [number, number, number];
    return { serialMs, twoMs, pinnedMs, sockets };
  } finally {
    for (const g of groups) g.stop();
  }
}
