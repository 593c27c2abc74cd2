/**
 * The entry count against the real kernel: a fresh namespace counts 0 and is not dumped (nor is a
 * socket opened there), yet its report is there and balanced (matched 0, no note, no failure); a
 * namespace holding entries counts exactly them — the counter read on the way in as ctnetlink's
 * statistics — is dumped, and its selected entries are deleted.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { after, before, test } from "node:test";
import { deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { planConntrack } from "../../src/conntrack/query.js";
import { ConntrackScan } from "../../src/conntrack/scan.js";
import { fromPath, type NetNS, openNetlinkIn } from "../../src/netns/index.js";
import { T } from "../ctnl/ct-layout.js";
import {
  CountingConnection,
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  insertConntrack,
  type ScratchNetns,
} from "../kit/index.js";
import { mixedTable } from "./population.js";

/**
 * What a scan with the real socket finds on the way into `ns` (the namespace's own counter), and
 * how many descriptors it holds open for it.
 */
function countedOnTheWayIn(ns: ScratchNetns): { empty: boolean; count: number | undefined; sockets: number } {
  using netns = fromPath(ns.path);
  const plan = planConntrack({ protocol: "udp", reply: { src: "10.61.244.1", sport: 5353 } });
  const before = readdirSync("/proc/self/fd").length;
  using scan = new ConntrackScan({ netns, ref: netns.ref, label: ns.name }, plan);
  const sockets = readdirSync("/proc/self/fd").length - before;
  return { empty: scan.empty, count: scan.count(), sockets };
}

/** The count the kernel gives for namespace `ns`, and how many dumps the scan then sent. */
function countIn(ns: ScratchNetns): { count: number | undefined; dumps: number } {
  using netns = fromPath(ns.path);
  const plan = planConntrack({ protocol: "udp", reply: { src: "10.61.244.1", sport: 5353 } });
  let conn: CountingConnection | undefined;
  const open = (protocol: number, target: { netns: NetNS | undefined }) => {
    conn = new CountingConnection(openNetlinkIn(target.netns, protocol));
    return conn;
  };
  using scan = new ConntrackScan({ netns, ref: netns.ref, label: ns.name }, plan, open);
  scan.each(() => {});
  return { count: scan.count(), dumps: conn?.sent.filter((m) => m.type === T.GET).length ?? -1 };
}

describeAsRoot("the conntrack entry count (IPCTNL_MSG_CT_GET_STATS)", () => {
  let empty: ScratchNetns;
  let full: ScratchNetns;
  before(async () => {
    await cleanupLeftovers();
    empty = await createNetns("ctn");
    full = await createNetns("ctn");
    insertConntrack(full.path, mixedTable());
  });
  after(async () => {
    await empty?.remove();
    await full?.remove();
  });

  test("an empty namespace counts 0 and is not dumped", () => {
    assert.deepEqual(countIn(empty), { count: 0, dumps: 0 });
  });

  test("a namespace with entries counts them, in every protocol, and is dumped", () => {
    assert.deepEqual(countIn(full), { count: mixedTable().length, dumps: 1 });
  });

  test("the counter read on the way in is the kernel's count; an empty namespace gets no socket", () => {
    assert.deepEqual(countedOnTheWayIn(empty), { empty: true, count: 0, sockets: 0 });
    assert.deepEqual(countedOnTheWayIn(full), { empty: false, count: mixedTable().length, sockets: 1 });
  });

  test("the skipped namespace reports matched 0; the other still loses its entries", () => {
    const selection = { protocol: "udp" as const, reply: { src: "10.61.244.1", sport: 5353 } };
    const expected = listConntrack({ ...selection, netns: full.name }).length;
    assert.ok(expected > 0, "the table holds entries of the selection");
    const none = deleteConntrack({ ...selection, netns: empty.name });
    assert.deepEqual(
      [
        none.matched,
        none.deleted,
        none.namespaces.map((n) => [n.netns, n.matched]),
        none.notes,
        none.failures,
      ],
      [0, 0, [[empty.name, 0]], [], []],
    );
    const some = deleteConntrack({ ...selection, netns: full.name });
    assert.equal(some.matched, expected);
    assert.equal(some.deleted, expected);
    assert.equal(some.matched, some.deleted + some.gone + some.failed.length + some.skipped);
    assert.deepEqual(listConntrack({ ...selection, netns: full.name }), []);
    assert.equal(listConntrack({ netns: full.name }).length, mixedTable().length - expected);
  });
});
