/**
 * The agent against the stand-in API server through the real client library, with a recording
 * terminator: what becomes a removal batch, across re-lists, dropped connections and restarts.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type AgentBackend, keyText } from "../src/backend.js";
import { StateFile } from "../src/state-file.js";
import { emptyOutcome } from "../src/terminator.js";
import {
  metric,
  RecordingTerminator,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  udpSlice,
  until,
} from "./kit/index.js";

let api: StandInApiServer;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  api = await StandInApiServer.start();
});
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await api.close();
});

/** The backend keys of the saved state file, every Service's. */
async function savedKeys(dir: string): Promise<string[]> {
  const loaded = await new StateFile(dir).load();
  assert.equal(loaded.problem, undefined);
  return [...loaded.backends.keys()].map(keyText).sort();
}

async function stateDir(): Promise<string> {
  const dir = await scratchDir("watch");
  cleanups.push(dir.remove);
  return dir.path;
}

let serviceCounter = 0;
/** A fresh Service name, so tests sharing the server do not see each other's slices. */
function freshService(): string {
  return `svc${++serviceCounter}`;
}

describe("agent and the stand-in API server", () => {
  test("not ready until the first list; then ready and live; a removal is one batch and one log line", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.1.0.1", "10.1.0.2"]));
    api.partition(true);
    const terminator = new RecordingTerminator();
    const dir = await stateDir();
    const refused = api.counts.refused;
    const started = startTestAgent(api, { stateDir: dir, terminator });
    await until(() => api.counts.refused > refused, 5000, "a refused connection");
    assert.equal(api.counts.list, 0);
    api.partition(false);
    const t = await started;
    cleanups.push(t.stop);
    assert.equal((await fetch(`${t.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${t.url}/healthz`)).status, 200);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.1.0.2"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.1.0.1:53/udp"]]);
    await until(() => t.logs.some((l) => l.msg === "removal batch"), 2000, "the batch log line");
    const line = t.logs.find((l) => l.msg === "removal batch")!;
    assert.deepEqual(line.backends, ["10.1.0.1:53/udp"]);
    assert.deepEqual(line.services, [`default/${svc}`]);
    assert.equal(line.level, 30);
    await t.stop();
    assert.equal(
      (await fetch(`${t.url}/healthz`).catch(() => undefined))?.status,
      undefined,
      "endpoints closed after stop",
    );
  });

  test("an endpoint moved between two slices is no removal; only the backend that really left is", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.2.0.1", "10.2.0.2"]));
    api.apply(udpSlice(`${svc}-b`, svc, 53, ["10.2.0.3"]));
    const terminator = new RecordingTerminator();
    const t = await startTestAgent(api, { stateDir: await stateDir(), terminator });
    cleanups.push(t.stop);
    // 10.2.0.1 moves from slice a to slice b (deleted first); 10.2.0.3 leaves for good.
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.2.0.2"]));
    api.apply(udpSlice(`${svc}-b`, svc, 53, ["10.2.0.1"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.2.0.3:53/udp"]]);
    // And the other order: added to b, then deleted from a — then a marker removal.
    api.apply(udpSlice(`${svc}-b`, svc, 53, ["10.2.0.1", "10.2.0.2"]));
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.2.0.9"]));
    api.remove("default", `${svc}-a`);
    await terminator.waitForBatches(2);
    assert.deepEqual(terminator.batches[1], ["10.2.0.9:53/udp"]);
  });

  test("a removal during a partition, with the history compacted: 410, re-list, and the removal is made", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.3.0.1", "10.3.0.2"]));
    api.apply(udpSlice(`${svc}-b`, svc, 53, ["10.3.0.3"]));
    const terminator = new RecordingTerminator();
    const t = await startTestAgent(api, { stateDir: await stateDir(), terminator });
    cleanups.push(t.stop);
    const expiredBefore = api.counts.expired;
    api.partition(true);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.3.0.2"]));
    api.remove("default", `${svc}-b`);
    api.compact();
    const relisted = api.next("list");
    api.partition(false);
    await relisted;
    // No removal missed (whether they come in one batch or two is the coalescing's business).
    await until(() => terminator.batches.flat().length >= 2, 5000, "both removals");
    assert.deepEqual(terminator.batches.flat().sort(), ["10.3.0.1:53/udp", "10.3.0.3:53/udp"]);
    assert.ok(api.counts.expired > expiredBefore, "the watch was not answered 410");
    assert.ok((await metric(t.url, "sockdiag_agent_watch_restarts_total")) >= 1);
  });

  test("an open watch expired (410) and a dropped connection lose no removal", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.4.0.1", "10.4.0.2", "10.4.0.3"]));
    const terminator = new RecordingTerminator();
    const t = await startTestAgent(api, { stateDir: await stateDir(), terminator });
    cleanups.push(t.stop);
    // Dropped: the change happens while the client reconnects; the watch resumes from its resourceVersion.
    const resumed = api.next("watch", (r) => !r.expired);
    api.dropConnections();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.4.0.2", "10.4.0.3"]));
    await resumed;
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.4.0.1:53/udp"]]);
    // Expired while open, with the change compacted away before the client comes back.
    api.partition(true);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.4.0.3"]));
    api.compact();
    api.partition(false);
    api.expireWatches();
    await terminator.waitForBatches(2);
    assert.deepEqual(terminator.batches[1], ["10.4.0.2:53/udp"]);
  });

  test("bookmarks are asked for and kept: after one, a compacted history needs no re-list", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.8.0.1"]));
    const terminator = new RecordingTerminator();
    const t = await startTestAgent(api, { stateDir: await stateDir(), terminator });
    cleanups.push(t.stop);
    const before = t.agent.resourceVersion();
    // Writes to other resources move the store's resourceVersion past the last slice event.
    api.touch();
    api.touch();
    const bookmarked = api.resourceVersion;
    // Ready comes with the list; the watch opens just after: bookmark until it has one.
    await until(
      () => {
        api.bookmark();
        return t.agent.resourceVersion() === bookmarked;
      },
      5000,
      "the bookmark to reach the agent",
    );
    assert.notEqual(before, bookmarked);
    api.compact();
    // The agents of earlier tests share the server and re-list after this drop: count this one's.
    const lists = await metric(t.url, "sockdiag_agent_lists_total");
    const from = api.requests.length;
    api.dropConnections();
    const resumed = () =>
      api.requests.slice(from).find((r) => r.kind === "watch" && r.resourceVersion === bookmarked);
    await until(() => resumed() !== undefined, 5000, "the watch to resume from the bookmark");
    assert.equal(resumed()!.answer, "ok");
    assert.equal(await metric(t.url, "sockdiag_agent_lists_total"), lists, "a re-list happened");
  });

  test("agent stopped, backend removed, agent started: the removal is made from the saved set", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.5.0.1", "10.5.0.2"]));
    const dir = await stateDir();
    const first = await startTestAgent(api, { stateDir: dir, terminator: new RecordingTerminator() });
    await first.stop();
    assert.ok((await savedKeys(dir)).includes("10.5.0.1:53/udp"));
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.5.0.2"]));
    const terminator = new RecordingTerminator();
    const second = await startTestAgent(api, { stateDir: dir, terminator });
    cleanups.push(second.stop);
    await terminator.waitForBatches(1);
    assert.ok(terminator.batches[0]!.includes("10.5.0.1:53/udp"));
    assert.ok(!terminator.batches.flat().includes("10.5.0.2:53/udp"), "a live backend was terminated");
    // The batch is logged once the terminator has answered: wait for the line, not for the call.
    await until(() => second.logs.some((l) => l.msg === "removal batch"), 2000, "the batch log line");
    const line = second.logs.find((l) => l.msg === "removal batch")!;
    assert.ok((line.restored as number) >= 1);
  });

  test("stop waits for the batch in flight, then saves; /metrics sums every batch", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.6.0.1", "10.6.0.2", "10.6.0.3"]));
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const terminator = new RecordingTerminator(() => {
      const o = emptyOutcome();
      Object.assign(o.sockets, { matched: 5, destroyed: 3, gone: 1, failed: 1 });
      Object.assign(o.conntrack, { matched: 2, deleted: 2 });
      o.namespaces = { visited: 4, failed: 1 };
      o.errors = [{ netns: "x", message: "boom" }];
      return o;
    });
    const slow = {
      async terminate(backends: readonly AgentBackend[]) {
        calls++;
        if (calls === 2) await released;
        return terminator.terminate(backends);
      },
    };
    const dir = await stateDir();
    const t = await startTestAgent(api, { stateDir: dir, terminator: slow });
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.6.0.2", "10.6.0.3"]));
    await terminator.waitForBatches(1);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.6.0.3"]));
    await until(() => calls === 2, 5000, "the second batch to start");
    let stopped = false;
    const stopping = t.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, "stop did not wait for the batch in flight");
    release();
    await stopping;
    assert.deepEqual(
      (await savedKeys(dir)).filter((k) => k.startsWith("10.6.")),
      ["10.6.0.3:53/udp"],
    );
    const errorLines = t.logs.filter((l) => l.msg === "removal batch error");
    assert.equal(errorLines.length, 2);
  });

  test("/metrics: counters are the sums of the batches' outcomes", async () => {
    const svc = freshService();
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.7.0.1", "10.7.0.2", "10.7.0.3"]));
    const terminator = new RecordingTerminator((backends) => {
      const o = emptyOutcome();
      Object.assign(o.sockets, {
        matched: 4 * backends.length,
        destroyed: 3 * backends.length,
        gone: backends.length,
      });
      Object.assign(o.conntrack, { matched: 2, deleted: 2 });
      o.namespaces = { visited: 3, failed: 1 };
      return o;
    });
    const t = await startTestAgent(api, { stateDir: await stateDir(), terminator });
    cleanups.push(t.stop);
    api.apply(udpSlice(`${svc}-a`, svc, 53, ["10.7.0.3"]));
    await terminator.waitForBatches(1);
    api.apply(udpSlice(`${svc}-a`, svc, 53, []));
    await terminator.waitForBatches(2);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_batches_total")) === 2,
      2000,
      "two batches counted",
    );
    const m = (s: string) => metric(t.url, s);
    assert.equal(await m("sockdiag_agent_removals_total"), 3);
    assert.equal(await m('sockdiag_agent_sockets_total{outcome="destroyed"}'), 9);
    assert.equal(await m('sockdiag_agent_sockets_total{outcome="gone"}'), 3);
    assert.equal(await m('sockdiag_agent_conntrack_entries_total{outcome="deleted"}'), 4);
    assert.equal(await m("sockdiag_agent_namespaces_visited_total"), 6);
    assert.equal(await m("sockdiag_agent_namespaces_failed_total"), 2);
    assert.equal(await m("sockdiag_agent_event_to_terminated_seconds_count"), 3);
    const text = await (await fetch(`${t.url}/metrics`)).text();
    assert.match(text, /^nodejs_eventloop_lag_max_seconds /m, "default metrics under their usual names");
    assert.match(text, /^process_cpu_seconds_total /m);
    assert.doesNotMatch(text, /^sockdiag_agent_(nodejs|process)_/m);
  });
});

describe("agent HTTP endpoints", () => {
  test("/readyz and /healthz answer 503 until ready and live; unknown paths 404, other methods 405", async () => {
    const { AgentHttpServer } = await import("../src/http-server.js");
    const { AgentMetrics } = await import("../src/metrics.js");
    let state = false;
    const server = new AgentHttpServer(new AgentMetrics().registry, {
      live: () => state,
      ready: () => state,
    });
    const { port } = await server.listen({ host: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${port}`;
    try {
      assert.equal((await fetch(`${url}/readyz`)).status, 503);
      assert.equal((await fetch(`${url}/healthz`)).status, 503);
      state = true;
      assert.equal((await fetch(`${url}/readyz`)).status, 200);
      assert.equal((await fetch(`${url}/healthz?verbose`)).status, 200);
      assert.equal((await fetch(`${url}/nope`)).status, 404);
      assert.equal((await fetch(`${url}/metrics`, { method: "POST" })).status, 405);
      const metrics = await fetch(`${url}/metrics`);
      assert.match(metrics.headers.get("content-type") ?? "", /text\/plain/);
      assert.match(await metrics.text(), /^# HELP sockdiag_agent_removals_total /m);
    } finally {
      await server.close();
    }
  });
});
