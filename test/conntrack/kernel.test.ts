/**
 * listConntrack and deleteConntrack against the real kernel, with conntrack-tools as the oracle: the
 * same entries listed for each selection (kernel filter on and off), and the same entries left
 * after deleting with sockdiag in one namespace and with `conntrack -D` in a twin. The table holds
 * the mixed entries and the zoned and ICMP ones, so every selection runs against both.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { deleteConntrack, iterateConntrack, listConntrack } from "../../src/conntrack/index.js";
import {
  cleanupLeftovers,
  conntrackKeys,
  conntrackTool,
  createNetns,
  describeAsRoot,
  entryKeys,
  insertConntrack,
  type ScratchNetns,
} from "../kit/index.js";
import { mixedTable, SELECTIONS, ZONE_ICMP_SELECTIONS, zoneIcmpTable } from "./population.js";

const table = () => [...mixedTable(), ...zoneIcmpTable()];
const selections = [...SELECTIONS, ...ZONE_ICMP_SELECTIONS];

describeAsRoot("conntrack against conntrack-tools", () => {
  let ns: ScratchNetns;
  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("ct");
    insertConntrack(ns.path, table());
  });
  after(async () => {
    await ns?.remove();
  });

  test("every entry, as conntrack -L lists them", async () => {
    const ours = listConntrack({ netns: ns.name });
    assert.equal(ours.length, table().length);
    assert.deepEqual(entryKeys(ours), conntrackKeys((await conntrackTool(ns.name, ["-L"])).stdout));
    assert.ok(ours.every((e) => e.netns === ns.name && e.id !== 0 && e.timeout > 0));
    const tcp = ours.filter((e) => e.protocol === "tcp");
    assert.equal(tcp.length, 10);
    assert.ok(tcp.every((e) => e.state === "ESTABLISHED"));
    assert.ok(ours.filter((e) => e.mark === 7).length === 5);
    assert.deepEqual(
      [0, 5, 7].map((z) => ours.filter((e) => e.zone === z && e.original.src === "10.63.1.1").length),
      [6, 6, 6],
    );
    const echo = ours.find((e) => e.protocol === "icmp" && e.zone === 5 && e.original.icmpId === 101);
    assert.deepEqual(
      echo && [echo.original.icmpType, echo.original.icmpCode, echo.reply.icmpType],
      [8, 0, 0],
    );
    assert.equal(ours.filter((e) => e.protocol === "icmpv6").length, 4);
  });

  for (const s of selections) {
    test(`selection: ${s.name}, kernel filter on and off`, async () => {
      const oracle = conntrackKeys((await conntrackTool(ns.name, ["-L", ...s.args])).stdout);
      assert.ok(oracle.length > 0, "the selection matches something");
      assert.deepEqual(entryKeys(listConntrack({ ...s.query, netns: ns.name })), oracle);
      assert.deepEqual(entryKeys(listConntrack({ ...s.query, netns: ns.name, kernelFilter: false })), oracle);
    });
  }

  test("alternatives (anyOf) select the union, in one dump", async () => {
    const a = conntrackKeys((await conntrackTool(ns.name, ["-L", "--reply-src", "10.61.244.1"])).stdout);
    const b = conntrackKeys(
      (await conntrackTool(ns.name, ["-L", "-f", "ipv6", "--reply-src", "fd61::a0"])).stdout,
    );
    const ours = listConntrack({
      netns: ns.name,
      protocol: "udp",
      anyOf: [{ reply: { src: "10.61.244.1", sport: 5353 } }, { reply: { src: "fd61::a0", sport: 53 } }],
    });
    assert.deepEqual(entryKeys(ours), [...a, ...b].sort());
    assert.deepEqual(listConntrack({ netns: ns.name, anyOf: [] }), []);
  });

  test("iterating every namespace labels each entry with its namespace", () => {
    // Other runs of this suite may hold the same table in their own namespaces: look at ours.
    const seen = [...iterateConntrack({ netns: "all", original: { src: "10.61.1.9" } })];
    const ours = seen.filter((e) => e.netns === ns.name);
    assert.equal(ours.length, 10);
    assert.ok(
      seen.every((e) => e.original.src === "10.61.1.9"),
      "the selection holds in every namespace",
    );
  });
});

describeAsRoot("deleteConntrack against conntrack -D", () => {
  let ours: ScratchNetns;
  let theirs: ScratchNetns;
  before(async () => {
    await cleanupLeftovers();
    ours = await createNetns("ctd");
    theirs = await createNetns("ctd");
  });
  after(async () => {
    await ours?.remove();
    await theirs?.remove();
  });

  for (const s of selections) {
    test(`the same entries are left: ${s.name}`, async () => {
      await conntrackTool(ours.name, ["-F"]);
      await conntrackTool(theirs.name, ["-F"]);
      insertConntrack(ours.path, table());
      insertConntrack(theirs.path, table());
      const report = deleteConntrack({ ...s.query, netns: ours.name, all: true });
      const tool = await conntrackTool(theirs.name, ["-D", ...s.args]);
      const deleted = Number(/(\d+) flow entries have been deleted/.exec(tool.stderr)?.[1]);
      assert.ok(deleted > 0);
      assert.equal(report.deleted, deleted);
      assert.equal(report.matched, report.deleted + report.gone + report.failed.length + report.skipped);
      assert.deepEqual(
        report.namespaces.map((n) => [n.netns, n.deleted]),
        [[ours.name, deleted]],
      );
      const left = (name: string) => conntrackTool(name, ["-L"]).then((r) => conntrackKeys(r.stdout));
      assert.deepEqual(await left(ours.name), await left(theirs.name));
      assert.equal((await left(ours.name)).length, table().length - deleted);
    });
  }

  test("a dry run counts and deletes nothing; batches of one delete the same", async () => {
    await conntrackTool(ours.name, ["-F"]);
    insertConntrack(ours.path, mixedTable());
    const dry = deleteConntrack({ netns: ours.name, protocol: "udp", original: { dport: 53 }, dryRun: true });
    assert.equal(dry.matched, 50);
    assert.equal(dry.deleted, 0);
    assert.equal(listConntrack({ netns: ours.name }).length, mixedTable().length);
    const seen: string[] = [];
    const r = deleteConntrack({
      netns: ours.name,
      protocol: "udp",
      original: { dport: 53 },
      batchSize: 1,
      onOutcome: (_e, outcome) => seen.push(outcome),
    });
    assert.equal(r.deleted, 50);
    assert.equal(seen.length, 50);
    assert.ok(seen.every((o) => o === "deleted"));
    assert.equal(listConntrack({ netns: ours.name }).length, mixedTable().length - 50);
  });

  test("a predicate keeps the entries it vetoes", async () => {
    await conntrackTool(ours.name, ["-F"]);
    insertConntrack(ours.path, mixedTable());
    const r = deleteConntrack({
      netns: ours.name,
      original: { src: "10.61.1.9" },
      predicate: (e) => (e.original.sport ?? 0) % 2 === 0,
    });
    assert.equal(r.deleted, 5);
    assert.equal(listConntrack({ netns: ours.name, original: { src: "10.61.1.9" } }).length, 5);
  });
});
