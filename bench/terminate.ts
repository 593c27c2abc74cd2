/**
 * Backend termination at scale: 100 namespaces of 1,000 UDP sockets, 10 per namespace connected to
 * the backend; the whole terminate against a shell loop of `ss -K -N NAME dst IP:PORT` over the same
 * namespaces plus the host.
 */

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { fromName, type Target } from "../src/netns/index.js";
import { BackendTerminator } from "../src/terminator/index.js";
import { type ManyScene, manyNamespaces, withChildHash } from "./many.js";
import { fmt, row, runProcess, TIMED_ENV } from "./measure.js";
import { CLI } from "./scene.js";

const COUNT = 100;
const PER_NAMESPACE = 1000;
const TARGETS = 10;
const BACKEND = { address: "127.0.0.1", port: 5353 };

/** The host and the bench's namespaces only, so the measurement does not depend on what else is pinned. */
function* targets(names: readonly string[]): Generator<Target> {
  yield { netns: undefined, ref: undefined, label: undefined };
  for (const name of names) {
    using netns = fromName(name);
    yield { netns, ref: netns.ref, label: name };
  }
}

export async function benchTerminate(): Promise<string[]> {
  const out: string[] = [];
  for (const [layout, entries] of [
    ["one UDP hash table shared by all namespaces (the default)", undefined],
    ["a UDP hash table per namespace (udp_child_hash_entries=1024)", 1024],
  ] as const) {
    out.push(
      `terminate: ${COUNT} namespaces of ${PER_NAMESPACE} UDP sockets, ${TARGETS} each connected to ${BACKEND.address}:${BACKEND.port};`,
      `  ${layout}`,
    );
    const scene = await withChildHash(entries, () =>
      manyNamespaces("term", COUNT, PER_NAMESPACE, TARGETS, BACKEND),
    );
    try {
      out.push(...(await measure(scene)));
    } finally {
      await scene.stop();
    }
  }
  return out;
}

/**
 * sockdiag/promises' terminator in a process of its own (bench/terminate-pool.ts), on every core or
 * pinned to one: warmed up, then timed once after the scene is refilled.
 */
async function pooled(
  scene: ManyScene,
  pinnedToOneCore: boolean,
): Promise<{ ms: number; destroyed: number; pool: number }> {
  const script = fileURLToPath(new URL("./terminate-pool.js", import.meta.url));
  const args = [process.execPath, script, BACKEND.address, String(BACKEND.port)];
  const child = spawn(
    pinnedToOneCore ? "taskset" : args[0]!,
    pinnedToOneCore ? ["-c", "0", ...args] : args.slice(1),
    {
      env: TIMED_ENV,
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  await lines.next(); // warmed up: its first run destroyed the scene's clients
  await scene.refill();
  child.stdin.write("\n");
  const result = JSON.parse(String((await lines.next()).value)) as {
    ms: number;
    destroyed: number;
    pool: number;
  };
  await once(child, "exit");
  return result;
}

async function measure(scene: ManyScene): Promise<string[]> {
  const out: string[] = [];
  let pooledMs = 0;
  const expected = COUNT * TARGETS;
  const terminator = new BackendTerminator({}, { targets: () => targets(scene.names) });
  terminator.terminate(BACKEND); // warm-up run (JIT); the targets are opened again below
  await scene.refill();
  const t0 = process.hrtime.bigint();
  const report = terminator.terminate(BACKEND);
  const lib = Number(process.hrtime.bigint() - t0) / 1e6;
  if (report.total.destroyed !== expected)
    throw new Error(`terminate destroyed ${report.total.destroyed}, expected ${expected}`);

  await scene.refill();
  const dst = `${BACKEND.address}:${BACKEND.port}`;
  const loop = `ss -K -n -u dst ${dst}; for n in ${scene.names.join(" ")}; do ss -K -n -N $n -u dst ${dst}; done`;
  const ss = runProcess("bash", ["-c", loop]);
  const killed = ss.stdout.split("\n").filter((l) => l.includes(dst)).length;
  out.push(
    row(`shell loop of ss -K -N NAME dst ${dst} (host + ${COUNT})`, fmt.ms(ss.ms), `${killed} destroyed`),
  );
  out.push(
    row(
      `BackendTerminator.terminate, in-process (${report.total.destroyed} destroyed)`,
      fmt.ms(lib),
      `${fmt.ratio(lib, ss.ms)} ss loop (goal <= 0.1)`,
    ),
  );

  for (const pinned of [false, true]) {
    await scene.refill();
    const run = await pooled(scene, pinned);
    out.push(
      row(
        `sockdiag/promises BackendTerminator, ${run.pool} worker${run.pool === 1 ? "" : "s"}${pinned ? " (taskset -c 0)" : ""} (${run.destroyed} destroyed)`,
        fmt.ms(run.ms),
        pinned
          ? `${fmt.ratio(run.ms, pooledMs)} the run on every core (goal >= 1.5)`
          : `${fmt.ratio(run.ms, ss.ms)} ss loop (goal <= 0.25)`,
      ),
    );
    pooledMs = run.ms;
  }

  await scene.refill();
  const cli = runProcess(process.execPath, [CLI, "terminate-backend", dst, "-j"]);
  const total = (JSON.parse(cli.stdout) as { total: { destroyed: number } }).total.destroyed;
  out.push(
    row(
      `sockdiag terminate-backend (whole process, all of /run/netns; ${total} destroyed)`,
      fmt.ms(cli.ms),
      `${fmt.ratio(cli.ms, ss.ms)} ss loop`,
    ),
  );
  return out;
}
