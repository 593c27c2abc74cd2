/**
 * sockdiag/promises against the sync API, in one run: the time to list 100,000 UDP sockets each way,
 * and the caller's event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution) while the
 * promises API lists them and while it terminates a backend across 100 namespaces.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import * as promises from "../src/promises/index.js";
import { listSockets } from "../src/sockets/index.js";
import { BackendTerminator } from "../src/terminator/index.js";
import { type ManyScene, manyNamespaces } from "./many.js";
import { fmt, median, row, timeFn } from "./measure.js";
import { udpScene } from "./scene.js";

declare const gc: (() => void) | undefined;

const TOTAL = 100_000;
const NAMESPACES = 100;
const BACKEND = { address: "127.0.0.1", port: 5353 };

/** Milliseconds of `fn` and the event loop's largest delay meanwhile, median time of `runs`. */
async function timeAsync(fn: () => Promise<unknown>, runs = 3): Promise<{ ms: number; maxDelay: number }> {
  await fn();
  const times: number[] = [];
  let maxDelay = 0;
  for (let i = 0; i < runs; i++) {
    gc?.();
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    h.disable();
    maxDelay = Math.max(maxDelay, h.max / 1e6);
  }
  return { ms: median(times), maxDelay };
}

/** The event loop's largest delay over `ms` of doing nothing: what the machine's load alone causes. */
async function idleDelay(ms: number): Promise<number> {
  gc?.();
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await new Promise((resolve) => setTimeout(resolve, ms));
  h.disable();
  return h.max / 1e6;
}

export async function benchPromises(): Promise<string[]> {
  const out = [`sockdiag/promises: one namespace holding ${TOTAL.toLocaleString("en-US")} UDP sockets`];
  const scene = await udpScene("bench-promises", TOTAL, BACKEND, 0);
  try {
    const query = { netns: scene.netns.path, protocols: ["udp"] as const, families: ["inet"] as const };
    let count = 0;
    const sync = timeFn(() => {
      count = listSockets(query).length;
    }, 3);
    out.push(row(`listSockets, sync (${count} sockets)`, fmt.ms(sync)));
    const viaWorker = await timeAsync(async () => {
      count = (await promises.listSockets(query)).length;
    });
    out.push(
      row(
        `listSockets, sockdiag/promises (${count} sockets)`,
        fmt.ms(viaWorker.ms),
        `${fmt.ratio(viaWorker.ms, sync)} sync (goal <= 1.5)`,
      ),
      row(
        "  event-loop delay, max, while listing",
        fmt.ms(viaWorker.maxDelay),
        "goal <= 10 ms (the sync call blocks for its whole time)",
      ),
      row(
        "  event-loop delay, max, idle for as long (the machine's own)",
        fmt.ms(await idleDelay(viaWorker.ms)),
      ),
    );
  } finally {
    await scene.stop();
  }

  out.push("", `sockdiag/promises: terminate a backend across ${NAMESPACES} namespaces of 1,000 UDP sockets`);
  const many = await manyNamespaces("promises", NAMESPACES, 1000, 10, BACKEND);
  const pins = pinDir(many);
  try {
    const config = { netnsDirs: [pins.dir] };
    const syncMs = timeFn(() => new BackendTerminator(config).terminate(BACKEND), 1);
    await many.refill();
    await new promises.BackendTerminator(config).terminate(BACKEND); // warm-up
    await many.refill();
    gc?.();
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t0 = process.hrtime.bigint();
    const report = await new promises.BackendTerminator(config).terminate(BACKEND);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    h.disable();
    out.push(
      row("BackendTerminator.terminate, sync (warm, nothing left to destroy)", fmt.ms(syncMs)),
      row(`BackendTerminator.terminate, sockdiag/promises (${report.total.destroyed} destroyed)`, fmt.ms(ms)),
      row("  event-loop delay, max, while terminating", fmt.ms(h.max / 1e6), "goal <= 10 ms"),
      row("  event-loop delay, max, idle for as long (the machine's own)", fmt.ms(await idleDelay(ms))),
    );
  } finally {
    pins.remove();
    await many.stop();
  }
  return out;
}

/** The scene's namespaces pinned again in a directory of their own, so nothing else is visited. */
function pinDir(scene: ManyScene): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "sdb-pins-"));
  const mounted: string[] = [];
  const remove = () => {
    for (const m of mounted) execFileSync("umount", [m]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(dir, { recursive: true });
    for (const name of scene.names) {
      const pin = join(dir, name);
      writeFileSync(pin, "");
      execFileSync("mount", ["--bind", `/run/netns/${name}`, pin]);
      mounted.push(pin);
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, remove };
}
