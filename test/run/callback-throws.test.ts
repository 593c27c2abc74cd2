/**
 * A caller's onOutcome that throws never ends a destroy or delete run: every item is still
 * destroyed or deleted and counted, each throw is kept in `callbackErrors`, and the report
 * balances — against real sockets and conntrack entries in a throwaway namespace.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { destroySockets } from "../../src/sockets/index.js";
import { ForeignError } from "../../src/sys/errors.js";
import type { TestEntry } from "../ctnl/ct-layout.js";
import {
  describeAsRoot,
  type HeldSocket,
  insertConntrack,
  startUdpScene,
  type UdpScene,
} from "../kit/index.js";

const ENTRIES: TestEntry[] = Array.from({ length: 5 }, (_, i) => ({
  proto: 17,
  orig: { src: "10.88.1.1", dst: "10.88.2.2", sport: 31000 + i, dport: 53 },
}));

describeAsRoot("an onOutcome that throws", () => {
  let scene: UdpScene;
  let clients: HeldSocket[];
  before(async () => {
    scene = await startUdpScene("cbthrow");
    clients = await scene.clients(4);
    insertConntrack(scene.ns.path, ENTRIES);
  });
  after(async () => {
    await scene?.stop();
  });

  test("destroySockets: every socket destroyed and counted, every throw reported", async () => {
    let told = 0;
    const report = destroySockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `dst 127.0.0.1:${scene.receiver.sport}`,
      batchSize: 2,
      onOutcome: () => {
        told++;
        throw new Error(`listener broke (${told})`);
      },
    });
    assert.deepEqual([report.matched, report.destroyed, report.failed.length, report.skipped], [4, 4, 0, 0]);
    assert.equal(report.matched, report.destroyed + report.gone + report.failed.length + report.skipped);
    assert.equal(told, 4);
    assert.equal(report.callbackErrors.length, 4);
    assert.ok(
      report.callbackErrors.every((e) => e instanceof ForeignError && /listener broke/.test(e.message)),
    );
    await scene.holder.waitFor(clients, "ECONNABORTED");
  });

  test("deleteConntrack (and its dry run): every entry counted, every throw reported", () => {
    const selection = { netns: scene.ns.name, protocol: "udp", original: { src: "10.88.1.1" } };
    const thrower = () => {
      throw new Error("listener broke");
    };
    const dry = deleteConntrack({ ...selection, dryRun: true, onOutcome: thrower });
    assert.deepEqual([dry.matched, dry.wouldDelete, dry.callbackErrors.length], [5, 5, 5]);
    const report = deleteConntrack({ ...selection, batchSize: 2, onOutcome: thrower });
    assert.deepEqual([report.matched, report.deleted, report.failed.length, report.skipped], [5, 5, 0, 0]);
    assert.equal(report.callbackErrors.length, 5);
    assert.equal(listConntrack(selection).length, 0);
  });
});
