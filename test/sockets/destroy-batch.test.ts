/**
 * Batched destroy at scale: 3,000 UDP sockets destroyed in one destroySockets call, 256 requests per
 * write (12 writes), every owner told ECONNABORTED, every other socket untouched.
 */
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { destroySockets, listSockets } from "../../src/sockets/index.js";
import { Errno } from "../../src/sys/index.js";
import { cleanupLeftovers, describeAsRoot, Population, withNetns } from "../kit/index.js";

const TARGET = { address: "127.0.0.1", port: 5300 };
const TARGETS = 3000;
const BATCH = 256;

describeAsRoot("destroySockets in batches", () => {
  before(async () => {
    await cleanupLeftovers();
  });

  test(`${TARGETS} UDP sockets in batches of ${BATCH}: all destroyed, all owners see ECONNABORTED`, async () => {
    await withNetns(1, async ([ns]) => {
      assert.ok(ns);
      const pop = await Population.start({
        netnsPath: ns.path,
        total: TARGETS + 600,
        targetCount: TARGETS,
        target: TARGET,
        perHolder: 2000,
      });
      try {
        const destroyed: Socket[] = [];
        const report = destroySockets({
          netns: ns.name,
          protocols: ["udp"],
          filter: `dst ${TARGET.address}:${TARGET.port}`,
          batchSize: BATCH,
          onOutcome: (s, outcome) => {
            if (outcome === "destroyed") destroyed.push(s);
          },
        });

        assert.deepEqual(
          [report.matched, report.destroyed, report.gone, report.failed, report.skipped],
          [TARGETS, TARGETS, 0, [], 0],
        );
        assert.deepEqual(
          destroyed.map((s) => s.cookie.toString()).sort(),
          pop.targets.map((m) => m.socket.cookie).sort(),
        );
        await pop.waitFor(pop.targets, "ECONNABORTED");
        assert.deepEqual(
          (await pop.poll(pop.others)).filter((e) => e !== Errno.EAGAIN),
          [],
        );
        // A destroyed UDP socket bound to its port stays bound, disconnected: none is connected to the target now.
        const stillConnected = listSockets({
          netns: ns.name,
          protocols: ["udp"],
          filter: `dst ${TARGET.address}:${TARGET.port}`,
        });
        assert.equal(stillConnected.length, 0);
      } finally {
        await pop.stop();
      }
    });
  });
});
