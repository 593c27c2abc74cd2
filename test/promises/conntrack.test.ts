/**
 * The conntrack calls of sockdiag/promises against their sync twins, in a throwaway namespace: the
 * same entries, the same reports, the same typed errors, callbacks on the caller's thread, and an
 * abort that stops deleting with a balanced report.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as sync from "sockdiag";
import * as promises from "sockdiag/promises";
import { mixedTable } from "../conntrack/population.js";
import type { TestEntry } from "../ctnl/ct-layout.js";
import {
  conntrackTool,
  createNetns,
  describeAsRoot,
  insertConntrack,
  type ScratchNetns,
  socketFds,
} from "../kit/index.js";

/** `n` UDP entries on addresses no other test uses: many chunks' worth for the stream. */
function largeTable(n: number): TestEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    proto: 17,
    orig: { src: `10.62.${i >> 8}.${i & 255}`, dst: "10.62.255.1", sport: 10000 + (i % 50000), dport: 53 },
  }));
}

describeAsRoot("sockdiag/promises conntrack calls give what the sync API gives", () => {
  let ns: ScratchNetns;
  before(async () => {
    ns = await createNetns("ct-promises");
  });
  after(async () => {
    await ns?.remove();
  });

  test("listConntrack and iterateConntrack list the same entries", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    const query = { netns: ns.name, protocol: "udp" };
    const expected = sync.listConntrack(query);
    assert.equal(expected.length, 55);
    // The same entries, field for field but the seconds left, which tick on.
    const stable = (entries: sync.ConntrackEntry[]) =>
      entries.map(({ timeout: _, ...e }) => e).sort((a, b) => a.id - b.id);
    assert.deepStrictEqual(stable(await promises.listConntrack(query)), stable(expected));
    const iterated: sync.ConntrackEntry[] = [];
    const it = promises.iterateConntrack(query);
    for await (const e of it) iterated.push(e);
    assert.deepStrictEqual(stable(iterated), stable(expected));
    assert.deepStrictEqual(it.failures, []);
  });

  test("deleteConntrack: the same dry-run report, a predicate on the caller's thread, typed errors", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    const query = { netns: ns.name, protocol: "udp", original: { dport: 53 } };
    const dry = await promises.deleteConntrack({ ...query, dryRun: true });
    assert.deepStrictEqual(dry, sync.deleteConntrack({ ...query, dryRun: true }));
    assert.ok(dry.matched > 0);
    assert.deepEqual(
      [dry.deleted, dry.wouldDelete, dry.gone, dry.failed.length, dry.skipped],
      [0, dry.matched, 0, 0, 0],
    );
    const asked: number[] = [];
    const report = await promises.deleteConntrack({
      ...query,
      predicate: async (e) => {
        asked.push(e.id);
        return e.family === "inet";
      },
    });
    assert.equal(asked.length, 50);
    assert.equal(report.deleted, 40);
    assert.equal(sync.listConntrack(query).length, 10);
    await assert.rejects(
      promises.deleteConntrack({ netns: ns.name, protocol: "udp" }),
      sync.errors.EmptySelectionError,
    );
    await assert.rejects(
      promises.listConntrack({ netns: ns.name, reply: { src: "10.0.0.300" } }),
      (err: unknown) =>
        err instanceof sync.errors.ConntrackQueryError && err.code === "ERR_SOCKDIAG_CONNTRACK_QUERY",
    );
  });

  test("an aborted delete rejects with AbortError and a balanced report", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    const controller = new AbortController();
    let seen = 0;
    const failure = await promises
      .deleteConntrack({
        netns: ns.name,
        protocol: "udp",
        original: { dport: 53 },
        batchSize: 5,
        signal: controller.signal,
        onOutcome: () => {
          if (++seen === 5) controller.abort();
        },
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(failure instanceof promises.AbortError, String(failure));
    const r = failure.report as sync.ConntrackDeleteReport;
    assert.equal(r.deleted, 5);
    assert.equal(r.matched, r.deleted + r.gone + r.failed.length + r.skipped);
    assert.equal(sync.listConntrack({ netns: ns.name, protocol: "udp", original: { dport: 53 } }).length, 45);
  });
});

describeAsRoot("sockdiag/promises iterateConntrack streams a large table", () => {
  const TOTAL = 20_000;
  let ns: ScratchNetns;
  before(async () => {
    ns = await createNetns("ct-stream");
    insertConntrack(ns.path, largeTable(TOTAL));
  });
  after(async () => {
    await ns?.remove();
  });

  test("the streamed entries are the sync iteration's, across many chunks", async () => {
    const query = { netns: ns.name, protocol: "udp" };
    // Two dumps need not list in the same order, and ids are 32-bit hashes that 20,000 entries
    // share now and then: entries are compared whole (all but the timeout, which counts down),
    // in one order.
    const canonical = (entries: Iterable<sync.ConntrackEntry>) =>
      [...entries]
        .map(({ timeout: _, ...e }) => e)
        .map((e) => [JSON.stringify(e), e] as const)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, e]) => e);
    const expected = [...sync.iterateConntrack(query)];
    assert.equal(expected.length, TOTAL);
    const streamed: sync.ConntrackEntry[] = [];
    for await (const e of promises.iterateConntrack(query)) streamed.push(e);
    assert.deepStrictEqual(canonical(streamed), canonical(expected));
  });

  test("breaking out of for await ends the worker's dump and closes its socket", async () => {
    await promises.listConntrack({ netns: ns.name, mark: 1 });
    const before = socketFds();
    let seen = 0;
    let during = 0;
    for await (const _ of promises.iterateConntrack({ netns: ns.name })) {
      if (++seen === 10) {
        during = socketFds();
        break;
      }
    }
    assert.ok(during > before, "the stream held its dump's netlink socket while open");
    // Calls run in order in the worker: once this one is answered, the stream's close was handled.
    const marked = await promises.listConntrack({ netns: ns.name, mark: 1 });
    assert.deepStrictEqual(marked, []);
    assert.equal(socketFds(), before);
    let again = 0;
    for await (const _ of promises.iterateConntrack({ netns: ns.name, protocol: "udp" })) again++;
    assert.equal(again, TOTAL);
  });
});
