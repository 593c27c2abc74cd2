/**
 * A namespace whose own counters (sockstat, sockstat6) hold no UDP socket of a family is not
 * dumped for it: the scan's plan leaves that dump out, and listing and destroying give what they
 * gave (IPv4 clients found, v4-mapped IPv6 clients found through the IPv6 dump).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { create, fromName, type NetNS } from "../../src/netns/index.js";
import { Scan } from "../../src/sockets/dump.js";
import { destroySockets, listSockets } from "../../src/sockets/index.js";
import { planQuery } from "../../src/sockets/query.js";
import { describeAsRoot, startUdpScene, type UdpScene } from "../kit/index.js";

const families = (scan: Scan) => scan.plan.inet.map((d) => `${d.protocol}/${d.family}`);

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
