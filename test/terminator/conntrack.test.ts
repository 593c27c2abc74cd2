/**
 * The conntrack step of BackendTerminator over a fake kernel (no root): which entries it asks for
 * (reply source = each UDP backend, IPv4 also as ::ffff: in IPv6 entries, one dump per family in a
 * namespace for every backend), how each entry is counted for its backend, failures and notes per
 * namespace, conntrack: false, and ok.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { Errno, SysError } from "../../src/sys/errors.js";
import { BackendTerminator, conntrackSelections } from "../../src/terminator/index.js";
import type { TestEntry } from "../ctnl/ct-layout.js";
import { FAKE, FakeKernel, type FakeNamespace } from "../kit/fake-kernel.js";
import { hostOnly } from "./seam.js";

let ids = 0;

/** An entry a client made to a virtual IP, DNATed to `src`:`sport` (its reply source). */
function entryTo(src: string, sport: number, client?: string): TestEntry {
  const v6 = src.includes(":");
  const from = client ?? (v6 ? "fd00::1" : "10.0.0.1");
  return {
    proto: 17,
    orig: { src: from, dst: v6 ? "fd00::100" : "10.96.0.1", sport: 4000, dport: 53 },
    reply: { src, dst: from, sport, dport: 4000 },
    id: ++ids,
  };
}

/** A terminator over a fake host namespace holding `host` (no sockets unless given). */
function over(host: FakeNamespace, config: ConstructorParameters<typeof BackendTerminator>[0] = {}) {
  const kernel = new FakeKernel({ "(host)": { sockets: [], ...host } });
  return { kernel, t: new BackendTerminator(config, { targets: hostOnly, open: kernel.open }) };
}

const dumps = (kernel: FakeKernel) => kernel.sent("(host)", FAKE.NETFILTER, FAKE.CT_DUMP);
const deletes = (kernel: FakeKernel) => kernel.sent("(host)", FAKE.NETFILTER, FAKE.CT_DELETE);

test("the selections: reply source = each UDP backend, an IPv4 one also as ::ffff: in IPv6 entries", () => {
  assert.deepEqual(
    conntrackSelections([
      { address: "10.0.0.5", port: 53, protocol: "udp" },
      { address: "10.0.0.6", port: 80, protocol: "tcp" },
      { address: "fd00::7", port: 5353, protocol: "any" },
    ]),
    [
      { family: "inet", reply: { src: "10.0.0.5", sport: 53 } },
      { family: "inet6", reply: { src: "::ffff:10.0.0.5", sport: 53 } },
      { family: "inet6", reply: { src: "fd00::7", sport: 5353 } },
    ],
  );
});

test("one dump per family in a namespace for every UDP backend, counted per backend and in total", () => {
  const gone = entryTo("fd00::7", 5353);
  const other = entryTo("10.0.0.9", 53);
  const { kernel, t } = over({
    entries: [entryTo("10.0.0.5", 53), entryTo("::ffff:10.0.0.5", 53), gone, other],
    deleteErrno: (e) => (e === gone ? Errno.ENOENT : 0),
  });
  const r = t.terminateMany([
    { address: "10.0.0.5", port: 53 },
    { address: "10.0.0.6", port: 80, protocol: "tcp" },
    { address: "fd00:0::7", port: 5353 },
  ]);
  assert.deepEqual(
    dumps(kernel).map((m) => m.payload[0]),
    [2, 10],
    "one IPv4 and one IPv6 dump for all three backends",
  );
  assert.equal(deletes(kernel).length, 3, "the entry of no backend is left alone");
  assert.deepEqual(kernel.namespaces.get("(host)")!.entries, [other]);
  assert.deepEqual(r.conntrack, { matched: 3, deleted: 2, wouldDelete: 0, gone: 1, failed: [], skipped: 0 });
  assert.deepEqual(r.namespaces[0]!.conntrack, r.conntrack);
  assert.deepEqual(
    r.backends.map((b) => b.conntrack),
    [
      { matched: 2, deleted: 2, wouldDelete: 0, gone: 0, failed: [], skipped: 0 },
      undefined,
      { matched: 1, deleted: 0, wouldDelete: 0, gone: 1, failed: [], skipped: 0 },
    ],
  );
  assert.equal(r.ok, true);
  assert.ok(kernel.allClosed);
});

test("conntrackPredicate vetoes entries one by one; without it every entry of the backend goes", () => {
  const kept = entryTo("10.0.0.5", 53, "10.0.0.1");
  const vetoed = (e: { original: { src: string } }) => e.original.src !== "10.0.0.1";
  const { kernel, t } = over(
    { entries: [kept, entryTo("10.0.0.5", 53, "10.0.0.2")] },
    { conntrackPredicate: vetoed },
  );
  const r = t.terminate({ address: "10.0.0.5", port: 53 });
  assert.deepEqual(kernel.namespaces.get("(host)")!.entries, [kept]);
  assert.equal(r.conntrack?.deleted, 1);
  assert.equal(r.conntrack?.matched, 1);

  const all = over({ entries: [entryTo("10.0.0.5", 53, "10.0.0.1"), entryTo("10.0.0.5", 53, "10.0.0.2")] });
  const r2 = all.t.terminate({ address: "10.0.0.5", port: 53 });
  assert.deepEqual(all.kernel.namespaces.get("(host)")!.entries, []);
  assert.equal(r2.conntrack?.deleted, 2);
});

test("conntrack: false, or TCP backends only: no conntrack connection and no conntrack report", () => {
  for (const [config, backend] of [
    [{ conntrack: false }, { address: "10.0.0.5", port: 53 }],
    [{}, { address: "10.0.0.5", port: 53, protocol: "tcp" as const }],
  ] as const) {
    const { kernel, t } = over({ entries: [entryTo("10.0.0.5", 53)] }, { ...config });
    const r = t.terminate(backend);
    assert.deepEqual(
      kernel.opened.map((o) => o.protocol),
      [FAKE.SOCK_DIAG],
    );
    assert.equal(r.conntrack, undefined);
    assert.equal(r.namespaces[0]!.conntrack, undefined);
  }
});

test("a conntrack failure is the namespace's conntrackError and makes the run not ok; a note does not", () => {
  const backend = { address: "10.0.0.5", port: 53 };
  // A dump that fails mid-way: the entries it listed are counted, the namespace failed.
  const broken = over({
    entries: [entryTo("10.0.0.5", 53), entryTo("10.0.0.5", 53)],
    conntrackDumpFailsAfter: 1,
  });
  const r = broken.t.terminate(backend);
  assert.equal(r.namespaces[0]!.conntrackError?.name, "NetlinkError");
  assert.match(r.namespaces[0]!.conntrackError?.message ?? "", /EIO/);
  assert.equal(r.conntrack?.matched, 1);
  assert.equal(r.ok, false);

  // A connection that cannot be opened: the namespace's error, nothing counted.
  const unopened = over({
    entries: [entryTo("10.0.0.5", 53)],
    openError: (p) => (p === FAKE.NETFILTER ? new Error("cannot open") : undefined),
  });
  const r2 = unopened.t.terminate(backend);
  assert.equal(r2.namespaces[0]!.conntrackError?.message, "cannot open");
  assert.equal(r2.namespaces[0]!.conntrackError?.code, "ERR_SOCKDIAG_FOREIGN");
  assert.deepEqual(r2.conntrack, { matched: 0, deleted: 0, wouldDelete: 0, gone: 0, failed: [], skipped: 0 });
  assert.equal(r2.ok, false);

  // No nfnetlink in the namespace (socket() fails): a note, not a failure.
  const none = over({
    openError: (p) => (p === FAKE.NETFILTER ? new SysError("socket", Errno.EPROTONOSUPPORT) : undefined),
  });
  const r3 = none.t.terminate(backend);
  assert.equal(r3.namespaces[0]!.conntrackNote?.skipped, "no-conntrack");
  assert.match(r3.namespaces[0]!.conntrackNote?.message ?? "", /no conntrack/);
  assert.equal(r3.namespaces[0]!.conntrackError, undefined);
  assert.equal(r3.ok, true);

  // An entry the kernel refuses to delete: failed, and the run not ok.
  const refused = over({ entries: [entryTo("10.0.0.5", 53)], deleteErrno: () => Errno.EPERM });
  const r4 = refused.t.terminate(backend);
  assert.deepEqual(
    r4.conntrack?.failed.map((f) => f.code),
    ["EPERM"],
  );
  assert.equal(r4.ok, false);
});

test("a dry run deletes nothing and counts what it would delete", () => {
  const entries = [entryTo("10.0.0.5", 53), entryTo("::ffff:10.0.0.5", 53)];
  const { kernel, t } = over({ entries: [...entries] }, { dryRun: true });
  const r = t.terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(deletes(kernel).length, 0);
  assert.deepEqual(kernel.namespaces.get("(host)")!.entries, entries);
  assert.deepEqual(r.conntrack, { matched: 2, deleted: 0, wouldDelete: 2, gone: 0, failed: [], skipped: 0 });
});

test("the conntrack log line gives a dry run's would-count, and a failure's warning the counts so far", () => {
  const logged: [string, Record<string, unknown> | undefined][] = [];
  const logger = {
    info: (m: string, f?: Record<string, unknown>) => logged.push([m, f]),
    warn: (m: string, f?: Record<string, unknown>) => logged.push([m, f]),
  };
  over(
    { entries: [entryTo("10.0.0.5", 53), entryTo("10.0.0.5", 53)] },
    { dryRun: true, logger, onePass: "off" },
  ).t.terminate({
    address: "10.0.0.5",
    port: 53,
  });
  assert.deepEqual(logged, [
    ["deleted conntrack entries", { netns: "(host)", matched: 2, wouldDelete: 2, failed: 0 }],
  ]);

  logged.length = 0;
  const refused = entryTo("10.0.0.5", 53);
  over(
    {
      entries: [entryTo("10.0.0.5", 53), refused, entryTo("10.0.0.5", 53)],
      deleteErrno: (e) => (e === refused ? Errno.EPERM : 0),
      conntrackDumpFailsAfter: 3,
    },
    { logger, onePass: "off" },
  ).t.terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(logged.length, 1);
  const [message, fields] = logged[0]!;
  assert.equal(message, "conntrack failed");
  assert.equal(fields?.netns, "(host)");
  assert.match(String(fields?.error), /EIO/);
  assert.equal(fields?.matched, 3);
  assert.equal((fields?.deleted as number) + (fields?.failed as number), 3);
});
