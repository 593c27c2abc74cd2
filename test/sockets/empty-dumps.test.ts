/**
 * A namespace whose own counters (sockstat, sockstat6) hold no UDP socket of a family is not
 * dumped for it: the scan's plan leaves that dump out, and listing and destroying give what they
 * gave (IPv4 clients found, v4-mapped IPv6 clients found through the IPv6 dump). TCP likewise, for
 * the states the counters count ("inuse" the hashed sockets, "tw" TIME-WAIT).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, test } from "node:test";
import { DEFAULT_STATES } from "../../src/diag/states.js";
import { create, fromName, type NetNS } from "../../src/netns/index.js";
import { destroySockets, listSockets } from "../../src/sockets/index.js";
import { planQuery, type SocketQuery } from "../../src/sockets/query.js";
import { Scan } from "../../src/sockets/scan.js";
import { createNetns, describeAsRoot, Holder, startUdpScene, type UdpScene } from "../kit/index.js";

const families = (scan: Scan) => scan.plan.inet.map((d) => `${d.protocol}/${d.family}`);

/** The dumps a scan of `query` in `netns` would make. */
function dumpsIn(netns: NetNS, query: SocketQuery): string[] {
  using scan = new Scan({ netns, ref: netns.ref, label: "scan" }, planQuery(query));
  return families(scan);
}

/**
 * Leaves one IPv4 TCP socket in TIME-WAIT (for 60 s) in the namespace it runs in: the client
 * closes first, then the server, and the process exits once both are closed.
 */
const TIME_WAIT = `
const net = require("node:net");
const server = net.createServer((c) => c.on("end", () => c.end())).listen(0, "127.0.0.1", () => {
  const client = net.connect(server.address().port, "127.0.0.1", () => client.end());
  client.on("close", () => server.close());
});`;

describeAsRoot("dumps a namespace's counters show empty", () => {
  let scene: UdpScene;
  let handle: NetNS;
  before(async () => {
    scene = await startUdpScene("empty-dumps");
    handle = fromName(scene.ns.name);
  });
  after(async () => {
    handle?.close();
    await scene?.stop();
  });

  test("an empty namespace: no UDP dump of either family; TCP is still dumped", () => {
    using empty = create();
    const plan = planQuery({ protocols: ["udp", "tcp"] });
    using scan = new Scan({ netns: empty, ref: empty.ref, label: "empty" }, plan);
    assert.deepEqual(families(scan), ["tcp/2", "tcp/10"]);
    assert.equal(plan.inet.length, 4, "the query's own plan is left as it was");
  });

  test("TCP: the default listing skips a family its counters show empty; other states are dumped", () => {
    using empty = create();
    assert.deepEqual(dumpsIn(empty, { protocols: ["tcp"], states: DEFAULT_STATES }), []);
    assert.deepEqual(dumpsIn(empty, { protocols: ["tcp"], states: ["listening", "time-wait"] }), []);
    // SYN-RECV (request sockets), CLOSE and BOUND-INACTIVE (bound only) are in no counter.
    for (const states of [["syn-recv"], ["close"], ["bound-inactive"], ["connected"], ["all"]])
      assert.deepEqual(dumpsIn(empty, { protocols: ["tcp"], states }), ["tcp/2", "tcp/10"], states.join());
  });

  test("TCP: a TIME-WAIT socket brings both families' dumps back for that state, and is listed", async () => {
    const ns = await createNetns("tcp-tw");
    try {
      execFileSync("ip", ["netns", "exec", ns.name, process.execPath, "-e", TIME_WAIT]);
      using netns = fromName(ns.name);
      // sockstat6 has no TIME-WAIT count: the TCP line's counts both families'.
      assert.deepEqual(dumpsIn(netns, { protocols: ["tcp"], states: ["time-wait"] }), ["tcp/2", "tcp/10"]);
      assert.deepEqual(dumpsIn(netns, { protocols: ["tcp"], states: DEFAULT_STATES }), []);
      const listed = listSockets({ netns, protocols: ["tcp"], states: ["listening", "time-wait"] });
      assert.deepEqual(
        listed.map((s) => [s.state, s.family]),
        [["time-wait", "inet"]],
      );
    } finally {
      await ns.remove();
    }
  });

  test("TCP: an IPv6 listener brings its family's dump back, not the other's", async () => {
    const ns = await createNetns("tcp-listen6");
    const holder = await Holder.start({ netnsPath: ns.path });
    try {
      await holder.open({ kind: "listener", family: "inet6", bind: { address: "::1" } }, 1);
      using netns = fromName(ns.name);
      assert.deepEqual(dumpsIn(netns, { protocols: ["tcp"], states: ["listening"] }), ["tcp/10"]);
      const listed = listSockets({ netns, protocols: ["tcp"], states: ["listening"] });
      assert.deepEqual(
        listed.map((s) => [s.state, s.family]),
        [["listening", "inet6"]],
      );
    } finally {
      await holder.stop();
      await ns.remove();
    }
  });

  test("IPv4 UDP sockets only: the IPv6 dump is left out, the sockets are listed and destroyed", async () => {
    const clients = await scene.clients(3);
    {
      using scan = new Scan(
        { netns: handle, ref: handle.ref, label: scene.ns.name },
        planQuery({ protocols: ["udp"] }),
      );
      assert.deepEqual(families(scan), ["udp/2"]);
    }
    const filter = `dst 127.0.0.1:${scene.receiver.sport}`;
    assert.equal(listSockets({ netns: handle, protocols: ["udp"], filter }).length, 3);
    const report = destroySockets({ netns: handle, protocols: ["udp"], filter });
    assert.equal(report.destroyed, 3);
    await scene.holder.waitFor(clients, "ECONNABORTED");
    await scene.holder.close(clients);
  });

  test("a v4-mapped IPv6 client makes the IPv6 dump happen, and it is destroyed", async () => {
    const [mapped] = await scene.holder.open(
      { kind: "udp", family: "inet6", connect: { address: "127.0.0.1", port: scene.receiver.sport } },
      1,
    );
    {
      using scan = new Scan(
        { netns: handle, ref: handle.ref, label: scene.ns.name },
        planQuery({ protocols: ["udp"] }),
      );
      assert.deepEqual(families(scan), ["udp/2", "udp/10"]);
    }
    const report = destroySockets({
      netns: handle,
      protocols: ["udp"],
      filter: `dst 127.0.0.1:${scene.receiver.sport}`,
    });
    assert.equal(report.destroyed, 1);
    await scene.holder.waitFor([mapped!], "ECONNABORTED");
    await scene.holder.close([mapped!]);
  });
});
