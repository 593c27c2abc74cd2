/**
 * sockdiag/promises against the sync API, in one run: the time to list 100,000 UDP sockets each way
 * (taken in turns), and the caller's event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms
 * resolution) while the promises API lists them and while it terminates a backend across 100
 * namespaces.
 *
 * It runs in a child process with Node's default heap settings: the bench's own
 * --max-semi-space-size=128 (there for the bytes/op counts) lets the caller's young generation
 * hold a whole listing, so each collection of it pauses the event loop longer than in a service
 * run with the defaults. Beside each delay, two controls: doing nothing for as long, and the same
 * kernel work done by another process (the sync CLI) — what the machine and the work cause alone.
 * A delay is the largest of one round; the goal is judged on the median round, and the worst is
 * printed beside it, because the controls show single rounds of 15–60 ms that no caller causes.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import * as promises from "../src/promises/index.js";
import { listSockets } from "../src/sockets/index.js";
import { BackendTerminator } from "../src/terminator/index.js";
import { type ManyScene, manyNamespaces, withChildHash } from "./many.js";
import { fmt, type Goal, median, recordGoal, row, TIMED_ENV, timeFn } from "./measure.js";
import { CLI, sceneNote, udpScene } from "./scene.js";

declare const gc: (() => void) | undefined;

const TOTAL = 100_000;
const NAMESPACES = 100;
const BACKEND = { address: "127.0.0.1", port: 5353 };

/** Rounds of every measurement: each delay figure is the median of the rounds' largest delays. */
const ROUNDS = 7;

/** The time of `fn` and the event loop's largest delay meanwhile (1 ms resolution). */
async function delayDuring(fn: () => Promise<unknown>): Promise<{ ms: number; delay: number }> {
  gc?.();
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t0 = process.hrtime.bigint();
  await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  h.disable();
  return { ms, delay: h.max / 1e6 };
}

/** Each round's largest delay, in the order measured. */
interface Rounds {
  /** Median time of a round. */
  ms: number;
  delays: number[];
}

/** ROUNDS rounds of `fn`, each after an untimed `prepare`. */
async function rounds(
  fn: () => Promise<unknown>,
  prepare: () => Promise<unknown> = async () => {},
): Promise<Rounds> {
  const times: number[] = [];
  const delays: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await prepare();
    const { ms, delay } = await delayDuring(fn);
    times.push(ms);
    delays.push(delay);
  }
  return { ms: median(times), delays };
}

/** "median 6.1 ms, worst 9.8": the median of the rounds' largest delays, and the largest. */
function delays(r: Rounds): string {
  return `median ${fmt.ms(median(r.delays))}, worst ${fmt.ms(Math.max(...r.delays))}`;
}

/** Doing nothing for `ms`: what the machine's load alone causes. */
const idle = (ms: number) => rounds(() => new Promise((resolve) => setTimeout(resolve, ms)));

/** The CLI running `args` in a process of its own (stdout dropped): the same kernel work, elsewhere. */
function cliElsewhere(args: string[], prepare?: () => Promise<unknown>): Promise<Rounds> {
  return rounds(async () => {
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { stdio: "ignore", env: TIMED_ENV });
    const code = await new Promise((resolve) => child.once("exit", resolve));
    if (code !== 0) throw new Error(`sockdiag ${args.join(" ")} exited ${code}`);
  }, prepare);
}

/** The goals this section measured, passed up to the parent's summary. */
const goals: Goal[] = [];
function goal(label: string, value: number, limit: number, unit: string): void {
  goals.push({ label, value, limit, unit });
}

/** Run this section in a child process with Node's default heap settings (see the top). */
export function benchPromises(): string[] {
  const r = spawnSync(
    process.execPath,
    ["--enable-source-maps", "--expose-gc", fileURLToPath(import.meta.url), "--child"],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 24 },
  );
  if (r.status !== 0) throw new Error(`promises bench exited with ${r.status ?? r.signal}`);
  const result = JSON.parse(r.stdout) as { lines: string[]; goals: Goal[] };
  for (const g of result.goals) recordGoal(g.label, g.value, g.limit, g.unit);
  return result.lines;
}

async function measure(): Promise<string[]> {
  const out = [`sockdiag/promises: one namespace holding ${sceneNote(TOTAL)}`];
  const scene = await udpScene("bench-promises", TOTAL, BACKEND, 0);
  try {
    const query = { netns: scene.netns.path, protocols: ["udp"] as const, families: ["inet"] as const };
    let count = 0;
    listSockets(query);
    await promises.listSockets(query); // warm-ups; the second starts the worker
    // In turns, a sync listing before each promises round, so that a change of load hits both.
    const syncTimes: number[] = [];
    const viaWorker = await rounds(
      async () => {
        count = (await promises.listSockets(query)).length;
      },
      async () => {
        gc?.(); // as before each promises round: neither pays for the other's garbage
        const start = performance.now();
        listSockets(query);
        syncTimes.push(performance.now() - start);
      },
    );
    const sync = median(syncTimes);
    out.push(row(`listSockets, sync (${count} sockets)`, fmt.ms(sync)));
    goal("promises / sync, listing 100,000", viaWorker.ms / sync, 1.5, "x");
    // The sync API blocks its caller for the whole listing: the delay is judged against that.
    goal(
      "event-loop delay, promises listing of 100,000 / sync listing",
      median(viaWorker.delays) / sync,
      0.2,
      "x",
    );
    out.push(
      row(
        `listSockets, sockdiag/promises (${count} sockets)`,
        fmt.ms(viaWorker.ms),
        `${fmt.ratio(viaWorker.ms, sync)} sync (goal <= 1.5)`,
      ),
      `  event-loop delay, max of each of ${ROUNDS} rounds (1 ms resolution):`,
      row(
        "    while listing",
        delays(viaWorker),
        `median ${fmt.ratio(median(viaWorker.delays), sync)} the sync listing's block (goal <= 0.2)`,
      ),
      row("    idle for as long (the machine's own)", delays(await idle(viaWorker.ms))),
      row(
        "    another process listing them (ls -u -a)",
        delays(await cliElsewhere(["ls", "-N", scene.netns.name, "-u", "-a"])),
      ),
    );
  } finally {
    await scene.stop();
  }

  out.push("", `sockdiag/promises: terminate a backend across ${NAMESPACES} namespaces of 1,000 UDP sockets`);
  await inManyNamespaces(undefined, async (many, config) => {
    const syncMs = timeFn(() => new BackendTerminator(config).terminate(BACKEND), 1);
    const { viaWorker, destroyed } = await terminateRounds(many, config);
    goal(
      "event-loop delay, promises terminate over 100 namespaces / sync",
      median(viaWorker.delays) / syncMs,
      0.02,
      "x",
    );
    const args = [
      "terminate-backend",
      `${BACKEND.address}:${BACKEND.port}`,
      "--netns-dir",
      config.netnsDirs[0]!,
      "--no-discover",
    ];
    out.push(
      row("BackendTerminator.terminate, sync (warm, nothing left to destroy)", fmt.ms(syncMs)),
      row(`BackendTerminator.terminate, sockdiag/promises (${destroyed} destroyed)`, fmt.ms(viaWorker.ms)),
      `  event-loop delay, max of each of ${ROUNDS} rounds (1 ms resolution):`,
      row(
        "    while terminating",
        delays(viaWorker),
        `median ${fmt.ratio(median(viaWorker.delays), syncMs)} the sync call's block (goal <= 0.02)`,
      ),
      row("    idle for as long (the machine's own)", delays(await idle(viaWorker.ms))),
      row(
        "    another process terminating (terminate-backend)",
        delays(await cliElsewhere(args, many.refill)),
      ),
    );
  });
  // The cause, shown: each namespace's dump walks the UDP table it reads, without yielding the core.
  await inManyNamespaces(1024, async (many, config) => {
    const { viaWorker } = await terminateRounds(many, config);
    out.push(
      row(
        "    while terminating, each namespace with a UDP table of its own",
        delays(viaWorker),
        `udp_child_hash_entries=1024; ${fmt.ms(viaWorker.ms)} a run`,
      ),
    );
  });
  return out;
}

/**
 * Run `fn` over a scene of NAMESPACES namespaces (made with udp_child_hash_entries = `childHash`),
 * pinned again in a directory of their own: `config` visits those only.
 */
async function inManyNamespaces(
  childHash: number | undefined,
  fn: (many: ManyScene, config: { netnsDirs: string[]; discover: false }) => Promise<void>,
): Promise<void> {
  const many = await withChildHash(childHash, () =>
    manyNamespaces("promises", NAMESPACES, 1000, 10, BACKEND),
  );
  const pins = pinDir(many);
  try {
    await fn(many, { netnsDirs: [pins.dir], discover: false });
  } finally {
    pins.remove();
    await many.stop();
  }
}

/** ROUNDS promises terminations, each after the scene's clients are opened again. */
async function terminateRounds(
  many: ManyScene,
  config: { netnsDirs: string[]; discover: false },
): Promise<{ viaWorker: Rounds; destroyed: number }> {
  await many.refill();
  await new promises.BackendTerminator(config).terminate(BACKEND); // warm-up
  let destroyed = 0;
  const viaWorker = await rounds(async () => {
    destroyed = (await new promises.BackendTerminator(config).terminate(BACKEND)).total.destroyed;
  }, many.refill);
  return { viaWorker, destroyed };
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

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes("--child")) {
  measure().then(
    (lines) => process.stdout.write(JSON.stringify({ lines, goals })),
    (err: Error) => {
      console.error(err.stack ?? err.message);
      process.exitCode = 1;
    },
  );
}
