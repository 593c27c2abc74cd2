/**
 * The agent against a stand-in API server that misbehaves as real servers and networks do —
 * malformed objects, lists cut short, outages, 410 storms, silent watches, stalled lists — with a
 * recording terminator. (Where sockets are involved, e2e.test.ts runs the same with the kernel.)
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, afterEach, before, describe, test } from "node:test";
import { parseKeyText } from "../src/backend.js";
import { StateFile } from "../src/state-file.js";
import { emptyOutcome } from "../src/terminator.js";
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

let api: StandInApiServer;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  api = await StandInApiServer.start();
});
// Each test's agent stops before the next starts: the request log is then the current agent's.
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  api.resetFaults();
});
after(async () => {
  await api.close();
});

let serviceCounter = 0;
/** A fresh Service name, so tests sharing the server do not see each other's slices. */
const freshService = () => `res${++serviceCounter}`;

async function stateDir(saved: [key: string, service: string][] = []): Promise<string> {
  const dir = await scratchDir("resilience");
  cleanups.push(dir.remove);
  const state = new StateFile(dir.path);
  await state.prepare();
  if (saved.length > 0)
    await state.save(
      saved.map(([key, service]) => ({ service: `default/${service}`, keys: [parseKeyText(key)!] })),
    );
  return dir.path;
}

async function agent(options: TestAgentOptions): Promise<TestAgent> {
  const t = await startTestAgent(api, options);
  cleanups.push(t.stop);
  return t;
}

const logged = (t: TestAgent, msg: string) => t.logs.filter((l) => l.msg === msg);
const status = async (t: TestAgent, path: string) => (await fetch(`${t.url}${path}`)).status;

describe("objects from the API server are untrusted input", () => {
  test("a malformed slice in the first list: the rest is applied, nothing saved is terminated, the watch runs", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.20.0.1", "10.20.0.2"]));
    const bad = udpSlice(`${svc}-bad`, svc, 53, ["10.20.0.9"]) as unknown as Record<string, unknown>;
    delete bad.metadata;
    api.applyRaw("default", `${svc}-bad`, bad);
    const terminator = new RecordingTerminator();
    const dir = await stateDir([
      ["10.20.0.1:53/udp", svc],
      ["10.20.0.2:53/udp", svc],
    ]);
    const t = await agent({ stateDir: dir, terminator });
    const synced = logged(t, "endpointslices synced")[0]!;
    assert.equal(synced.removedWhileAway, 0);
    assert.equal(await status(t, "/readyz"), 200);
    const skipped = logged(t, "endpointslice parts skipped");
    assert.equal(skipped.length, 1);
    assert.equal(skipped[0]!.level, 40);
    assert.equal(await metric(t.url, 'sockdiag_agent_slice_parts_skipped_total{reason="metadata"}'), 1);
    // The watch runs: a real removal is acted on, and only that one.
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.20.0.2"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.20.0.1:53/udp"]]);
    api.remove("default", `${svc}-bad`);
  });

  test("malformed objects by watch are skipped and logged once; the agent goes on", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.21.0.1", "10.21.0.2"]));
    const terminator = new RecordingTerminator();
    const t = await agent({ stateDir: await stateDir(), terminator });
    const nullEndpoint = udpSlice(`${svc}-b`, svc, 53, ["10.21.0.3"]) as { endpoints: unknown[] };
    nullEndpoint.endpoints.push(null);
    api.applyRaw("default", `${svc}-b`, nullEndpoint);
    api.applyRaw("default", `${svc}-c`, { kind: "EndpointSlice", endpoints: [{ addresses: ["10.21.0.4"] }] });
    const portZero = udpSlice(`${svc}-d`, svc, 0, ["10.21.0.5"]);
    api.apply(portZero);
    await until(() => logged(t, "endpointslice parts skipped").length === 3, 5000, "three skipped slices");
    // A re-list sees the same versions again: nothing is logged twice.
    const relisted = api.next("list");
    api.compact();
    api.touch();
    api.expireWatches();
    await relisted;
    await until(async () => (await metric(t.url, "sockdiag_agent_lists_total")) === 2, 5000, "the re-list");
    assert.equal(logged(t, "endpointslice parts skipped").length, 3);
    // The port-0 backend never becomes a removal the terminator would refuse.
    api.apply(udpSlice(`${svc}-d`, svc, 0, []));
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.21.0.2"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches.flat(), ["10.21.0.1:53/udp"]);
    assert.equal(await status(t, "/healthz"), 200);
    for (const name of ["b", "c", "d"]) api.remove("default", `${svc}-${name}`);
  });

  test("a list cut short or failed half way is retried from the start, never half applied", async () => {
    const svc = freshService();
    for (let i = 0; i < 4; i++) api.apply(udpSlice(`${svc}-${i}`, svc, 53, [`10.22.0.${i + 1}`]));
    const saved: [string, string][] = [1, 2, 3, 4].map((i) => [`10.22.0.${i}:53/udp`, svc]);
    saved.push(["10.22.0.99:53/udp", svc]);
    const terminator = new RecordingTerminator();
    const from = api.requests.length;
    // The list at "0" answered 410: the consistent lists that follow are paged.
    api.fail("list", { code: 410, times: 1 });
    api.cut("list");
    // The second page of the second attempt fails: the third attempt must start again.
    const secondAttempt = api.next("list", (r) => r.answer === "ok" && r.continue === undefined);
    // Had it never come, the lists asserted below say so; its time-out is no unhandled rejection.
    void secondAttempt.then(
      () => api.fail("list", { code: 500, times: 1 }),
      () => {},
    );
    const t = await agent({ stateDir: await stateDir(saved), terminator, watch: { pageSize: 2 } });
    const lists = api.requests.slice(from).filter((r) => r.kind === "list");
    assert.deepEqual(
      lists.map((r) => [r.answer, r.continue === undefined]),
      [
        ["expired", true],
        ["cut", true],
        ["ok", true],
        ["status 500", false],
        ...lists.slice(4).map((r) => [r.answer, r.continue === undefined]),
      ],
    );
    assert.equal(lists[4]!.continue, undefined, "the third attempt started again from the first page");
    assert.equal(logged(t, "endpointslices synced")[0]!.removedWhileAway, 1);
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.22.0.99:53/udp"]]);
    assert.ok((await metric(t.url, 'sockdiag_agent_errors_total{where="list"}')) >= 2);
  });
});

describe("the API server fails; the agent stays calm", () => {
  test("liveness is the process: an outage turns readiness 503, never liveness", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.23.0.1", "10.23.0.2"]));
    const terminator = new RecordingTerminator();
    const t = await agent({ stateDir: await stateDir(), terminator, watch: { staleAfterMs: 300 } });
    api.partition(true);
    await until(async () => (await status(t, "/readyz")) === 503, 10_000, "readiness to report the outage");
    assert.equal(await status(t, "/healthz"), 200);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.23.0.2"]));
    api.partition(false);
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.23.0.1:53/udp"]]);
    await until(async () => (await status(t, "/readyz")) === 200, 10_000, "readiness back");
  });

  test("every watch answered 410: lists back off exponentially, and a removal made meanwhile is acted on", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.24.0.1", "10.24.0.2"]));
    const terminator = new RecordingTerminator();
    const backoff = { initialMs: 40, maxMs: 640 };
    await agent({ stateDir: await stateDir(), terminator, backoff });
    const from = api.requests.length;
    api.expireEveryWatch(true);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.24.0.2"]));
    await until(
      () => api.requests.slice(from).filter((r) => r.kind === "list").length >= 6,
      20_000,
      "six lists",
    );
    api.expireEveryWatch(false);
    const lists = api.requests.slice(from).filter((r) => r.kind === "list");
    // Each list follows an expired watch after a back-off of at least 40·2^n ms, capped.
    for (let n = 1; n < 6; n++) {
      const floor = Math.min(backoff.maxMs, backoff.initialMs * 2 ** n);
      assert.ok(
        lists[n]!.at - lists[n - 1]!.at >= floor,
        `list ${n} came ${lists[n]!.at - lists[n - 1]!.at} ms after the one before, under ${floor}`,
      );
    }
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.24.0.1:53/udp"]]);
  });

  test("a silent watch is given up, and each asks the server to end it within 1 to 2 times the timeout", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.25.0.1", "10.25.0.2"]));
    const terminator = new RecordingTerminator();
    const from = api.requests.length;
    const t = await agent({ stateDir: await stateDir(), terminator, watchTimeoutMs: 1000 });
    api.blackhole(true);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.25.0.2"]));
    // The watch in the black hole is given up, and the next one too.
    await until(
      () => api.requests.slice(from).filter((r) => r.kind === "watch").length >= 2,
      15_000,
      "watches given up",
    );
    assert.deepEqual(terminator.batches, []);
    api.blackhole(false);
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.25.0.1:53/udp"]]);
    for (const r of api.requests.slice(from).filter((r) => r.kind === "watch"))
      assert.ok(r.timeoutSeconds! >= 1 && r.timeoutSeconds! <= 2, `timeoutSeconds ${r.timeoutSeconds}`);
    assert.ok(
      logged(t, "endpointslice watch failed").some((l) =>
        /silent watch/.test(String((l.err as { message: string }).message)),
      ),
    );
  });

  test("a list that hangs is given up and asked again", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.26.0.1"]));
    api.stall("list");
    const from = api.requests.length;
    const t = await agent({ stateDir: await stateDir(), unready: true, watchTimeoutMs: 1000 });
    await until(
      () => api.requests.slice(from).filter((r) => r.answer === "stalled").length >= 2,
      15_000,
      "a second list",
    );
    assert.equal(t.agent.ready(), false);
    api.stall("list", false);
    await until(() => t.agent.ready(), 15_000, "the agent to be ready");
  });
});

describe("metrics and logs", () => {
  test("promtool accepts /metrics; a failed socket is counted once; errors are logged as err with a code", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.27.0.1", "10.27.0.2"]));
    const terminator = new RecordingTerminator(() => {
      const o = emptyOutcome();
      Object.assign(o.sockets, { matched: 2, destroyed: 1, failed: 1 });
      o.errors = [{ netns: "pod-a", code: "EPERM", message: "cannot destroy: EPERM" }];
      return o;
    });
    const t = await agent({ stateDir: await stateDir(), terminator });
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.27.0.2"]));
    await terminator.waitForBatches(1);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_batches_total")) === 1,
      5000,
      "the batch counted",
    );
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const promtool = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    assert.equal(promtool.error, undefined, "promtool (Debian package prometheus) must be installed");
    assert.equal(promtool.status, 0, promtool.stdout + promtool.stderr);
    assert.equal(await metric(t.url, 'sockdiag_agent_sockets_total{outcome="failed"}'), 1);
    assert.doesNotMatch(text, /errors_total\{where="batch"\}/);
    const line = logged(t, "removal batch error")[0]!;
    const err = line.err as Record<string, unknown>;
    assert.deepEqual([err.message, err.code], ["cannot destroy: EPERM", "EPERM"]);
    assert.equal(line.netns, "pod-a");
    assert.equal("error" in line, false);
  });
});
