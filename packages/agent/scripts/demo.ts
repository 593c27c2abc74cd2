/**
 * `npm run demo:agent` (root): the agent reacting to EndpointSlice changes. A stand-in API server
 * on 127.0.0.1 holds Service "dns" with two slices; two throwaway namespaces hold UDP clients of
 * its backends A and B. An endpoint moves between the slices (nothing happens), then B leaves the
 * Service (its clients get ECONNABORTED, A's never notice). Needs root; everything is removed at
 * the end, also on Ctrl-C.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  BackendScene,
  metric,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  udpSlice,
} from "../test/kit/index.js";

const [A, B] = ["127.13.9.1", "127.13.9.2"];
const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (n: number, text: string) => console.log(`\n${bold(`== ${n}. ${text}`)}`);

async function main(): Promise<void> {
  const api = await StandInApiServer.start();
  const dir = await scratchDir("demo");
  let scene: BackendScene | undefined;
  let agent: TestAgent | undefined;
  const cleanup = async () => {
    await agent?.stop();
    await scene?.stop();
    await api.close();
    await dir.remove();
  };
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
  try {
    step(
      1,
      `a stand-in API server at ${api.url}; Service default/dns with slices dns-a [${A}] and dns-b [${B}], UDP port 5353`,
    );
    api.apply(udpSlice("dns-a", "dns", 5353, [A]));
    api.apply(udpSlice("dns-b", "dns", 5353, [B]));
    scene = await BackendScene.start("demo", 2, [A, B]);
    const [a, b] = [await scene.clients(A), await scene.clients(B)];
    console.log(
      `   namespaces ${scene.nodes.map((n) => n.name).join(", ")} (pinned in ${scene.dir}), each with 2 clients of A and 2 of B`,
    );

    step(2, "start the agent (in-process, real client library, real kernel), coalescing 500 ms");
    agent = await startTestAgent(api, { stateDir: dir.path, netnsDirs: [scene.dir], coalesceMs: 500 });
    let shown = 0;
    const showLogs = () => {
      for (const line of agent!.logs.slice(shown)) {
        const { level: _l, time: _t, pid: _p, hostname: _h, name: _n, msg, ...rest } = line;
        console.log(`   log: ${msg as string} ${JSON.stringify(rest)}`);
      }
      shown = agent!.logs.length;
    };
    showLogs();

    step(3, `move ${A} from dns-a to dns-b (delete first, then add): the Service still has it — no removal`);
    api.apply(udpSlice("dns-a", "dns", 5353, []));
    api.apply(udpSlice("dns-b", "dns", 5353, [B, A]));
    await sleep(1500);
    showLogs();
    await scene.assertAlive(a, "clients of A");
    await scene.assertAlive(b, "clients of B");
    console.log("   every client of A and B is still connected");

    step(4, `${B} leaves the Service`);
    const batch = agent.nextLog("removal batch");
    const removedAt = performance.now();
    api.apply(udpSlice("dns-b", "dns", 5353, [A]));
    await scene.aborted(b, 5000);
    console.log(
      `   B's ${BackendScene.count(b)} clients got ECONNABORTED ${Math.round(performance.now() - removedAt)} ms after the change`,
    );
    await scene.assertAlive(a, "clients of A");
    console.log("   A's clients never noticed");
    await batch;
    showLogs();

    step(5, "what /metrics says");
    for (const sample of [
      'sockdiag_agent_sockets_total{outcome="destroyed"}',
      "sockdiag_agent_removals_total",
      "sockdiag_agent_batches_total",
      "sockdiag_agent_namespaces_visited_total",
      "sockdiag_agent_event_to_terminated_seconds_sum",
    ])
      console.log(`   ${sample} ${await metric(agent.url, sample)}`);
  } finally {
    await cleanup();
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.stack ?? err.message}`);
  process.exitCode = 1;
});
