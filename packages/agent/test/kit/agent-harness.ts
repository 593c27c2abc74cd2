/**
 * The agent as tests run it: started in-process against a stand-in API server, on a free port,
 * with its JSON log lines collected and quick restarts.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, afterEach, before } from "node:test";
import type { AgentOptions } from "../../src/options.js";
import { type RunningAgent, type StartParts, startAgent } from "../../src/start.js";
import type { Terminator } from "../../src/terminator.js";
import { StandInApiServer } from "./api-server.js";
import { arrival, listed, until } from "./waits.js";

export interface TestAgent {
  agent: RunningAgent;
  /** Every log line so far, parsed. */
  logs: Record<string, unknown>[];
  /** Base URL of /metrics, /healthz, /readyz. */
  url: string;
  /**
   * Resolves with the next log line whose msg is `msg` (from now on); rejects after `timeoutMs`
   * (default 20 s) naming the lines logged meanwhile.
   */
  nextLog(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export interface TestAgentOptions extends Partial<AgentOptions> {
  stateDir: string;
  terminator?: Terminator;
  /** Reflector settings. */
  watch?: StartParts["watch"];
  /** The reflector's back-off (default: 50 ms, capped at 200 ms). */
  backoff?: StartParts["backoff"];
  /** Resolve as soon as the agent started, not once it is ready. */
  unready?: boolean;
  /** The kubeconfig user's section (default: the server's bearer token). */
  kubeUser?: Record<string, unknown>;
  execTimeoutMs?: number;
  /** The clock of the Events' rate and series window. */
  clock?: StartParts["clock"];
}

/**
 * For a test file whose tests take turns on one stand-in server: started before them, closed
 * after; what a test pushes onto `cleanups` runs after it, newest first, and the server's faults
 * are reset, so each test meets a well-behaved server and no agent of the test before.
 */
export function standInServerPerFile(): {
  readonly api: StandInApiServer;
  cleanups: (() => Promise<void>)[];
} {
  let server: StandInApiServer | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    server = await StandInApiServer.start();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    server?.resetFaults();
  });
  after(async () => {
    await server?.close();
  });
  return {
    get api() {
      return server ?? assert.fail("the stand-in server starts before the tests");
    },
    cleanups,
  };
}

/** A scratch directory removed by the returned function. */
export async function scratchDir(label: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `sockdiag-agent-${label}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Start an agent watching `api`; resolves once it is ready (first list synced). */
export async function startTestAgent(api: StandInApiServer, options: TestAgentOptions): Promise<TestAgent> {
  const kubeconfig = await api.writeKubeconfig(join(options.stateDir, "kubeconfig.json"), options.kubeUser);
  const logs: Record<string, unknown>[] = [];
  const listeners = new Set<(line: Record<string, unknown>) => void>();
  const logStream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split("\n")) {
        if (!text) continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        logs.push(line);
        for (const listener of listeners) listener(line);
      }
      done();
    },
  });
  const nextLog = (msg: string, timeoutMs?: number) => {
    const from = logs.length;
    return arrival<Record<string, unknown>>(
      `the log line "${msg}"`,
      (arrived) => {
        const listener = (line: Record<string, unknown>) => {
          if (line.msg === msg) arrived(line);
        };
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      {
        timeoutMs,
        meanwhile: () => `lines logged meanwhile: ${listed(logs.slice(from).map((l) => String(l.msg)))}`,
      },
    );
  };
  const { terminator, watch, backoff, unready: _, kubeUser: __, execTimeoutMs, clock, ...rest } = options;
  const agent = await startAgent(
    {
      kubeconfig,
      netnsDirs: [],
      discover: false,
      listen: { host: "127.0.0.1", port: 0 },
      protocols: ["udp"],
      onTerminating: "terminate",
      coalesceMs: 200,
      watchTimeoutMs: 300_000,
      aftercareMs: 0,
      maxObjectBytes: 4 * 1024 * 1024,
      maxListBytes: 1024 * 1024 * 1024,
      conntrack: true,
      onePass: "off",
      dryRun: false,
      events: true,
      nodeName: undefined,
      logLevel: "info",
      ...rest,
    },
    {
      ...(terminator ? { terminator } : {}),
      logStream,
      ...(watch ? { watch } : {}),
      backoff: { initialMs: 50, maxMs: 200, ...backoff },
      ...(execTimeoutMs !== undefined ? { execTimeoutMs } : {}),
      ...(clock ? { clock } : {}),
      onFatal: (err) => logs.push({ fatal: String(err) }),
    },
  );
  if (!options.unready) {
    // An agent never ready is stopped here: the test never gets it to stop, and its retries would
    // keep the file running after its last test.
    await until(() => agent.ready(), 10_000, "the agent to be ready").catch(async (err: unknown) => {
      await agent.stop();
      throw err;
    });
  }
  return { agent, logs, nextLog, url: `http://127.0.0.1:${agent.listen.port}`, stop: () => agent.stop() };
}

/** The value of one sample of the agent's /metrics ("name" or 'name{label="x"}'), 0 when absent. */
export async function metric(url: string, sample: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  for (const line of text.split("\n")) {
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
  }
  return 0;
}
