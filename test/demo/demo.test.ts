/**
 * `npm run demo` stays inside its own scene: a UDP client connected to the demo's backend A
 * (127.0.0.1:15353) in the test's own namespace and in a namespace pinned in /run/netns — with
 * its conntrack entry, whose reply source is that backend — are all still there after the demo
 * terminated A; and the demo shows both halves, sockets destroyed and the Service client's
 * conntrack entry deleted.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { listConntrack } from "../../src/conntrack/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  type ScratchNetns,
} from "../kit/index.js";

const DEMO = fileURLToPath(new URL("../../scripts/demo.js", import.meta.url));
const BACKEND_A = { address: "127.0.0.1", port: 15353 };
const run = promisify(execFile);

describeAsRoot("npm run demo", () => {
  let ns: ScratchNetns;
  let host: Holder;
  let pod: Holder;
  let hostClient: HeldSocket | undefined;
  let podClient: HeldSocket | undefined;
  const entriesToA = () =>
    listConntrack({
      netns: ns.name,
      protocol: "udp",
      reply: { src: BACKEND_A.address, sport: BACKEND_A.port },
    });

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("demo-canary");
    await ns.ip("link", "set", "lo", "up");
    // A rule that reads the conntrack state makes conntrack track this namespace's flows.
    await run("ip", [
      "netns",
      "exec",
      ns.name,
      "nft",
      "add table ip t; add chain ip t out { type filter hook output priority 0 ; }; add rule ip t out ct state new counter",
    ]);
    host = await Holder.start();
    pod = await Holder.start({ netnsPath: ns.path });
    [hostClient] = await host.open({ kind: "udp", family: "inet", connect: BACKEND_A });
    await pod.open({ kind: "udp", family: "inet", bind: BACKEND_A });
    [podClient] = await pod.open({ kind: "udp", family: "inet", connect: BACKEND_A });
    assert.deepEqual(await pod.send([podClient!]), [0]);
    assert.equal(entriesToA().length, 1, "the canary's conntrack entry");
  });

  after(async () => {
    await host?.stop();
    await pod?.stop();
    await ns?.remove();
  });

  test("shows both halves and touches nothing outside its own namespaces", async () => {
    const { stdout } = await run(process.execPath, [DEMO], { timeout: 120_000 });

    assert.match(stdout, /total: 8 matched, 8 destroyed, 0 already gone, 0 failed in 4 namespaces/);
    assert.match(stdout, /conntrack: ([1-9]\d*) matched, \1 deleted, 0 already gone, 0 failed/);
    assert.match(
      stdout,
      /client-4 \(IPv4 -> Service 10\.96\.0\.10:53\): pong from B, the same socket, no error/,
    );
    assert.equal(existsSync("/run/sockdiag-demo"), false, "the demo's pins are removed");

    assert.equal(entriesToA().length, 1, "the conntrack entry in a namespace of /run/netns is still there");
    assert.deepEqual(
      await host.send([hostClient!]),
      [0],
      "the client in the caller's namespace is still connected",
    );
    assert.deepEqual(
      await pod.send([podClient!]),
      [0],
      "the client in a namespace of /run/netns is still connected",
    );
  });
});
