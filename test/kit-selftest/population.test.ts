import assert from "node:assert/strict";
import { before, test } from "node:test";
import { Errno } from "../../src/sys/index.js";
import { cleanupLeftovers, withNetns } from "../kit/netns.js";
import { OTHER_PORTS, Population, splitEven } from "../kit/population.js";
import { describeAsRoot } from "../kit/root.js";
import { ss, ssKill } from "../kit/ss.js";

const TARGET = { address: "127.0.0.1", port: 5300 };

test("splitEven", () => {
  assert.deepEqual(splitEven(10, 3), [4, 3, 3]);
  assert.deepEqual(splitEven(2, 4), [1, 1, 0, 0]);
  assert.deepEqual(splitEven(0, 2), [0, 0]);
});

describeAsRoot("test kit: population", () => {
  before(async () => {
    await cleanupLeftovers();
  });

  test("spreads sockets over holders; ss sees exactly the targets connected to the target", async () => {
    await withNetns(1, async ([ns]) => {
      assert.ok(ns);
      const pop = await Population.start({
        netnsPath: ns.path,
        total: 2500,
        targetCount: 700,
        target: TARGET,
        perHolder: 1000,
      });
      try {
        assert.equal(pop.holders.length, 3);
        assert.equal(new Set(pop.holders.map((h) => h.pid)).size, 3);
        assert.deepEqual([pop.targets.length, pop.others.length, pop.size], [700, 1800, 2500]);

        const all = await ss(["-u", "-a"], { netns: ns.name });
        assert.equal(all.length, 2500);
        const toTarget = all.filter(
          (r) => r.state === "established" && r.dst === TARGET.address && r.dport === TARGET.port,
        );
        assert.deepEqual(
          toTarget.map((r) => r.cookie).sort(),
          pop.targets.map((m) => m.socket.cookie).sort(),
        );
        const others = all.filter((r) => !toTarget.includes(r));
        assert.equal(others.filter((r) => r.state === "close").length, 900);
        const otherPorts = new Set(others.filter((r) => r.state === "established").map((r) => r.dport));
        assert.equal(otherPorts.size, OTHER_PORTS);
        assert.ok(!otherPorts.has(TARGET.port));

        // Destroying the targets (with ss -K) aborts them and only them.
        const killed = await ssKill(["-u", "dst", `${TARGET.address}:${TARGET.port}`], { netns: ns.name });
        assert.equal(killed.length, 700);
        await pop.waitFor(pop.targets, "ECONNABORTED");
        assert.deepEqual(
          (await pop.poll(pop.others)).filter((e) => e !== Errno.EAGAIN),
          [],
        );
      } finally {
        await pop.stop();
      }
      assert.deepEqual(await ss(["-u", "-a"], { netns: ns.name }), []);
    });
  });

  test("holds more sockets than a namespace has ephemeral ports", async () => {
    await withNetns(1, async ([ns]) => {
      assert.ok(ns);
      const pop = await Population.start({
        netnsPath: ns.path,
        total: 40_000,
        targetCount: 30_000,
        target: TARGET,
      });
      try {
        assert.equal(pop.holders.length, 3);
        const rows = await ss(["-u", "dst", `${TARGET.address}:${TARGET.port}`], { netns: ns.name });
        assert.equal(rows.length, 30_000);
      } finally {
        await pop.stop();
      }
    });
  });

  test("a population that cannot be opened stops the holders it started", async () => {
    await withNetns(1, async ([ns]) => {
      assert.ok(ns);
      // 10.9.9.9 is unreachable in a namespace with only lo: the first holder's one target fails
      // (ENETUNREACH) while the others open their unconnected sockets, which must be closed again.
      const target = { address: "10.9.9.9", port: 1 };
      await assert.rejects(
        Population.start({
          netnsPath: ns.path,
          total: 30,
          targetCount: 1,
          target,
          perHolder: 10,
          others: "unconnected",
        }),
        /ENETUNREACH/,
      );
      assert.deepEqual(await ss(["-u", "-a"], { netns: ns.name }), []);
    });
  });
});
