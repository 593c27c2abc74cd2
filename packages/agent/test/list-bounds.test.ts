/**
 * List answers too large to hold: read as they stream, abandoned at a bound, counted, logged and
 * retried, the agent alive and its memory bounded.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import {
  metric,
  RecordingTerminator,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  type TestAgentOptions,
  udpSlice,
  until,
} from "./kit/index.js";

const MI = 1024 * 1024;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(): Promise<StandInApiServer> {
  const api = await StandInApiServer.start();
  cleanups.push(() => api.close());
  api.apply(udpSlice("svc-a", "svc", 53, ["10.70.0.1", "10.70.0.2"]));
  return api;
}

async function agent(api: StandInApiServer, options: Omit<TestAgentOptions, "stateDir">): Promise<TestAgent> {
  const dir = await scratchDir("bounds");
  cleanups.push(dir.remove);
  const t = await startTestAgent(api, { stateDir: dir.path, unready: true, ...options });
  cleanups.push(t.stop);
  return t;
}

const failures = (t: TestAgent) =>
  t.logs
    .filter((l) => l.msg === "endpointslice list failed")
    .map((l) => (l.err as { type: string; message: string }).type);

describe("list answers over a bound", () => {
  test("a 1 GiB answer is abandoned at --max-list-bytes as it streams: counted, logged, retried; RSS stays bounded", async () => {
    const api = await server();
    api.flood(1024 * MI);
    const peakBefore = process.resourceUsage().maxRSS * 1024;
    const terminator = new RecordingTerminator();
    const t = await agent(api, { terminator, maxListBytes: 128 * MI });
    await until(() => t.agent.ready(), 120_000, "the agent to be ready");
    const grown = process.resourceUsage().maxRSS * 1024 - peakBefore;
    // Holding the 128 MiB prefix would grow RSS by at least 128 MiB. The stand-in server writes the flood
    // from this same process, and Node 24's heap grows further than Node 20's before it collects
    // (61 MiB here against 16-25 MiB), so the bound sits between the two, not at a figure of one Node.
    assert.ok(grown < 100 * MI, `peak RSS grew ${Math.round(grown / MI)} MiB reading a 128 MiB prefix`);
    assert.ok(
      api.floodWritten >= 128 * MI && api.floodWritten < 160 * MI,
      `the server wrote ${Math.round(api.floodWritten / MI)} MiB before the agent hung up`,
    );
    assert.equal(await metric(t.url, 'sockdiag_agent_answers_too_large_total{bound="answer"}'), 1);
    assert.deepEqual(failures(t), ["AnswerTooLargeError"]);
    assert.equal((await fetch(`${t.url}/healthz`)).status, 200);
    // The list that followed is the real state: the agent works.
    api.apply(udpSlice("svc-a", "svc", 53, ["10.70.0.2"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.70.0.1:53/udp"]]);
  });

  test("an object over --max-object-bytes abandons the answer each time, with back-off, until it is gone", async () => {
    const api = await server();
    const big = udpSlice("svc-big", "svc-big", 53, ["10.70.1.1"]);
    big.metadata!.annotations = { note: "x".repeat(100_000) };
    api.apply(big);
    const t = await agent(api, { maxObjectBytes: 64 * 1024 });
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_answers_too_large_total{bound="object"}')) >= 2,
      20_000,
      "two answers abandoned",
    );
    assert.equal(t.agent.ready(), false);
    assert.ok(failures(t).every((type) => type === "AnswerTooLargeError"));
    api.remove("default", "svc-big");
    await until(() => t.agent.ready(), 20_000, "the agent to be ready");
  });
});
