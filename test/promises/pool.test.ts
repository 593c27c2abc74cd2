/**
 * sockdiag/promises spreads a termination over a worker per core: its report is the one the
 * synchronous terminator gives on the same scene (namespaces in the walk's order, the same counts
 * per namespace, per backend and in all), and a namespace that fails in one worker is reported
 * beside what the others did.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as sync from "sockdiag";
import * as promises from "sockdiag/promises";
import { isShared, poolSize } from "../../src/schedule/index.js";
import { cpuList, describeAsRoot, onOneCore } from "../kit/index.js";
import { HOST, type Scene, useScene } from "../terminator/scene.js";

const shape = (r: sync.BatchTerminationReport) => ({
  namespaces: r.namespaces.map((n) => [n.netns, n.report?.matched, n.report?.destroyed, n.error?.name]),
  total: r.total,
  backends: r.backends.map((b) => b.total),
  ok: r.ok,
});

describeAsRoot("a termination shared over the worker pool", () => {
  let scene: Scene;
  const open = useScene("pool", (s) => {
    scene = s;
  });
  const backends = () => [
    { address: "127.0.0.1", port: scene.portA },
    { address: "::1", port: scene.portB },
  ];

  test("the pool follows the process's CPU set: one worker once moved to one core, every core again after", async () => {
    const before = poolSize();
    assert.ok(before >= 2, `this test needs two cores (${before})`);
    await open();
    const config = { netnsDirs: [scene.dir], discover: false, dryRun: true, conntrack: false };
    const viaSync = new sync.BackendTerminator(config).terminateMany(backends());
    await onOneCore(cpuList(), async () => {
      assert.equal(poolSize(), 1);
      assert.equal(isShared(config), false, "on one core, a termination goes to the one worker");
      const onOne = await new promises.BackendTerminator(config).terminateMany(backends());
      assert.deepEqual(shape(onOne), shape(viaSync));
    });
    assert.equal(poolSize(), before);
    assert.equal(isShared(config), true);
  });

  test("the pool's report is the synchronous one: order, counts, per backend, ok", async () => {
    assert.ok(poolSize() >= 2, `this test needs two cores to share namespaces (${poolSize()})`);
    await open();
    const config = { netnsDirs: [scene.dir], discover: false, dryRun: true, conntrack: false };
    const viaSync = new sync.BackendTerminator(config).terminateMany(backends());
    const viaPool = await new promises.BackendTerminator(config).terminateMany(backends());
    assert.deepEqual(shape(viaPool), shape(viaSync));
    assert.deepEqual(
      viaPool.namespaces.map((n) => n.netns),
      [HOST, ...scene.pinnedNames],
    );
    assert.ok(viaPool.total.matched > 0, "the scene's clients were found");
    // A dry run's merged report balances: what it found would be destroyed, nothing was.
    for (const t of [viaPool.total, ...viaPool.backends.map((b) => b.total)])
      assert.deepEqual(
        [t.destroyed, t.wouldDestroy, t.gone, t.failed.length, t.skipped],
        [0, t.matched, 0, 0, 0],
      );
    const order: [number, number | undefined][] = [];
    await new promises.BackendTerminator({
      ...config,
      onNamespace: (_r, i, total) => void order.push([i, total]),
    }).terminateMany(backends());
    assert.deepEqual(
      order.sort((a, b) => a[0] - b[0]),
      [0, 1, 2, 3].map((i) => [i, 4]),
      "onNamespace is told each namespace's place in the whole walk, and the walk's size",
    );
  });

  test("a namespace failing in one worker is reported; the other workers' namespaces are terminated", async () => {
    const clients = await open();
    const [, bad] = scene.pinnedNames;
    const report = await new promises.BackendTerminator({
      netnsDirs: [scene.dir],
      discover: false,
      conntrack: false,
      predicate: (s) => {
        if (s.netns?.label === bad) throw new Error(`veto map of ${bad} unavailable`);
        return true;
      },
    }).terminate({ address: "127.0.0.1", port: scene.portA });
    const failed = report.namespaces.filter((n) => n.error);
    assert.deepEqual(
      failed.map((n) => [n.netns, n.error?.name]),
      [[bad, "PredicateError"]],
    );
    for (const n of report.namespaces.filter((n) => n.netns !== bad))
      assert.ok((n.report?.destroyed ?? 0) > 0, n.netns);
    assert.equal(
      report.total.matched,
      report.total.destroyed + report.total.gone + report.total.failed.length + report.total.skipped,
    );
    assert.equal(report.ok, false);
    await scene.expect(clients, (node, kind) => node !== bad && (kind === "a4" || kind === "a4m"));
  });
});
