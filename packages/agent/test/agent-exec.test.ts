/**
 * The agent with a kubeconfig `exec` user against the stand-in API server, which requires the
 * bearer token the plugin hands out: a plugin that hangs after the first sync, a token the server
 * stops accepting, a credential that expires.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  metric,
  processAlive,
  RecordingTerminator,
  scratchDir,
  standInServerPerFile,
  startTestAgent,
  type TestAgent,
  TestPlugin,
  udpSlice,
  until,
  untilDead,
} from "./kit/index.js";

const stand = standInServerPerFile();
const { cleanups } = stand;

/** An agent whose kubeconfig user runs a fresh plugin answering the server's current token. */
async function agentWithPlugin(
  service: string,
  options: { execTimeoutMs?: number; expirationTimestamp?: string } = {},
): Promise<{ t: TestAgent; plugin: TestPlugin; terminator: RecordingTerminator }> {
  const dir = await scratchDir("agent-exec");
  cleanups.push(dir.remove);
  const plugin = await TestPlugin.create(dir.path);
  await plugin.answer({ token: stand.api.token, expirationTimestamp: options.expirationTimestamp });
  const terminator = new RecordingTerminator();
  stand.api.apply(udpSlice(`${service}-a`, service, 53, ["10.40.0.1", "10.40.0.2"]));
  // Should the test fail before it removes a backend, the next test's removal of the same address
  // would not end it (this Service still has it) and no batch would come.
  cleanups.push(async () => {
    stand.api.remove("default", `${service}-a`);
  });
  const t = await startTestAgent(stand.api, {
    stateDir: dir.path,
    terminator,
    kubeUser: plugin.user(),
    execTimeoutMs: options.execTimeoutMs ?? 10_000,
    watch: { staleAfterMs: 60_000 },
  });
  cleanups.push(t.stop);
  return { t, plugin, terminator };
}

/** Resolves once a watch made since request `from` has been answered. */
const watching = (from: number) =>
  until(
    () => stand.api.requests.slice(from).some((r) => r.kind === "watch" && r.answer === "ok"),
    10_000,
    "a watch",
  );

const calls = (t: TestAgent, outcome: string) =>
  metric(t.url, `sockdiag_agent_exec_plugin_calls_total{outcome="${outcome}"}`);
const readyz = async (t: TestAgent) => (await fetch(`${t.url}/readyz`)).status;

describe("an exec credential plugin", () => {
  test("that hangs after the first sync is killed, counted and logged, readiness says so; once it answers again the removal made meanwhile is acted on", async () => {
    const { t, plugin, terminator } = await agentWithPlugin("exec-hang", { execTimeoutMs: 300 });
    assert.equal(await calls(t, "ok"), 1);
    assert.equal(await readyz(t), 200);
    // Under load a run at start-up may itself have outlasted 0.3 s: count and read from here on.
    const timeoutsBefore = await calls(t, "timeout");
    const logsBefore = t.logs.length;
    // The server stops taking the token; the plugin hangs from now on.
    await plugin.hang(true);
    await plugin.answer({ token: stand.api.rotateToken() });
    stand.api.closeWatches();
    await until(
      async () => (await calls(t, "timeout")) >= timeoutsBefore + 2,
      20_000,
      "two plugin runs killed at the timeout",
    );
    assert.equal(await readyz(t), 503);
    assert.equal(await metric(t.url, 'sockdiag_agent_exec_plugin_calls_total{outcome="ok"}'), 1);
    const logged = t.logs.slice(logsBefore);
    const failures = logged.filter((l) => l.msg === "exec credential plugin failed");
    assert.ok(failures.length >= 2);
    assert.equal(failures[0]!.outcome, "timeout");
    assert.match((failures[0]!.err as { message: string }).message, /did not answer within 0.3 s; killed/);
    // The agent retried with a back-off.
    const retries = logged.filter(
      (l) =>
        l.msg === "endpointslice watch failed" &&
        /exec plugin/.test((l.err as { message: string }).message) &&
        (l.retryInMs as number) > 0,
    );
    assert.ok(retries.length >= 2, "requests that found no credential were retried after a back-off");
    // A removal made while the agent could not authenticate.
    stand.api.apply(udpSlice("exec-hang-a", "exec-hang", 53, ["10.40.0.2"]));
    await plugin.hang(false);
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.40.0.1:53/udp"]]);
    await until(async () => (await readyz(t)) === 200, 10_000, "readiness back");
    // Each run that hung was killed with the child it started; the others exited.
    for (const pid of await plugin.pids())
      assert.equal(await processAlive(pid), false, `run ${pid} outlived itself`);
    for (const child of await plugin.childPids()) await untilDead(child, "a hung run's child");
    assert.ok(t.logs.some((l) => l.msg === "exec credential plugin works again"));
  });

  test("is run again when the server answers 401 to its token, and the agent goes on with the new one", async () => {
    const { t, plugin, terminator } = await agentWithPlugin("exec-401");
    const from = stand.api.requests.length;
    await plugin.answer({ token: stand.api.rotateToken() });
    stand.api.closeWatches();
    await watching(from);
    const refused = stand.api.requests.slice(from).filter((r) => r.answer === "status 401");
    assert.equal(refused.length, 1, "one request refused before the plugin ran again");
    assert.equal((await plugin.pids()).length, 2);
    assert.equal(await calls(t, "ok"), 2);
    stand.api.apply(udpSlice("exec-401-a", "exec-401", 53, ["10.40.0.2"]));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.40.0.1:53/udp"]]);
  });

  test("is run again for a request once its credential has expired, and not before", async () => {
    let from = stand.api.requests.length;
    const lasting = await agentWithPlugin("exec-lasting", { expirationTimestamp: "2100-01-01T00:00:00Z" });
    await watching(from);
    from = stand.api.requests.length;
    stand.api.closeWatches();
    await watching(from);
    assert.equal((await lasting.plugin.pids()).length, 1, "an unexpired credential is reused");
    await lasting.t.stop();
    from = stand.api.requests.length;
    const expired = await agentWithPlugin("exec-expired", { expirationTimestamp: "2000-01-01T00:00:00Z" });
    await watching(from);
    const runs = (await expired.plugin.pids()).length;
    from = stand.api.requests.length;
    stand.api.closeWatches();
    await watching(from);
    assert.equal((await expired.plugin.pids()).length, runs + 1, "an expired credential is fetched again");
    assert.ok(
      stand.api.requests.slice(from).every((r) => r.answer !== "status 401"),
      "with no 401 needed",
    );
  });
});
