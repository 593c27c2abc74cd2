/**
 * The terminator's report logic without root: injected namespaces (handles of this process's own
 * namespace, which anyone may open, standing in for others) over a fake kernel that answers each
 * one's dumps and destroys. Totals are the sum of the namespaces, every count balances, a note is
 * no failure, and a namespace that fails after destroying began keeps what it did.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  current,
  type NamespaceFailure,
  type NamespaceNote,
  type NetnsError,
  NetnsNotFoundError,
  NotANetnsError,
  recordNetnsError,
} from "../../src/netns/index.js";
import type { Tally } from "../../src/run/index.js";
import { Errno, ForeignError } from "../../src/sys/errors.js";
import { BackendTerminator, type TerminatorSeam } from "../../src/terminator/index.js";
import { FakeKernel, type FakeNamespace, type FakeSocket } from "../kit/fake-kernel.js";
import { type NamespaceSource, targetsFrom } from "./seam.js";

let cookies = 0;

/** `n` UDP sockets connected to 10.0.0.5:`dport` (IPv4, or v4-mapped IPv6). */
function clients(n: number, dport = 53, family: FakeSocket["family"] = "inet"): FakeSocket[] {
  return Array.from({ length: n }, (_, i) => ({
    family,
    protocol: "udp" as const,
    src: family === "inet" ? "10.0.0.1" : "::ffff:10.0.0.1",
    sport: 40000 + i,
    dst: family === "inet" ? "10.0.0.5" : "::ffff:10.0.0.5",
    dport,
    cookie: ++cookies,
  }));
}

/**
 * The seam of a fake kernel holding `namespaces` (the host, "(host)", and the names after it, each
 * lent a handle of our own namespace), with `errors` met on the way (failures, or notes where the
 * walk would note them).
 */
function seam(namespaces: Record<string, FakeNamespace>, errors: NetnsError[] = []): TerminatorSeam {
  const failures: NamespaceFailure[] = [];
  const notes: NamespaceNote[] = [];
  for (const error of errors) recordNetnsError(error, error.netns, failures, notes);
  const names = Object.keys(namespaces).filter((n) => n !== "(host)");
  const source = (): NamespaceSource => ({
    failures,
    notes,
    *[Symbol.iterator]() {
      for (const name of names) {
        using netns = current();
        yield { name, netns };
      }
    },
  });
  return { open: new FakeKernel(namespaces).open, targets: targetsFrom(source) };
}

const balanced = (t: Tally) =>
  t.matched === t.destroyed + t.wouldDestroy + t.gone + t.failed.length + t.skipped;

const backend = { address: "10.0.0.5", port: 53 };

test("the total is the sum of the namespaces, and every count balances", () => {
  const host = clients(5);
  const [gone, busy] = host;
  const report = new BackendTerminator(
    { conntrack: false },
    seam({
      // 3 destroyed, 1 closed since the dump (gone), 1 refused (EBUSY): a failure, the rest go on.
      "(host)": {
        sockets: host,
        destroyErrno: (s) => (s === gone ? Errno.ENOENT : s === busy ? Errno.EBUSY : 0),
      },
      a: { sockets: clients(4) },
      // EPERM: the first socket fails, the others are not attempted.
      b: { sockets: clients(3), destroyErrno: () => Errno.EPERM },
    }),
  ).terminate(backend);
  assert.deepEqual(
    report.namespaces.map((n) => n.netns),
    ["(host)", "a", "b"],
  );
  assert.deepEqual(
    report.namespaces.map((n) => {
      const r = n.report!;
      return [r.matched, r.destroyed, r.gone, r.failed.length, r.skipped];
    }),
    [
      [5, 3, 1, 1, 0],
      [4, 4, 0, 0, 0],
      [3, 0, 0, 1, 2],
    ],
  );
  assert.deepEqual(
    report.total.failed.map((f) => f.code),
    ["EBUSY", "EPERM"],
  );
  assert.deepEqual(
    { ...report.total, failed: report.total.failed.length },
    { matched: 12, destroyed: 7, wouldDestroy: 0, gone: 1, failed: 2, skipped: 2 },
  );
  assert.ok(balanced(report.total));
  for (const n of report.namespaces) assert.ok(balanced(n.report!), n.netns);
  assert.equal(report.ok, false, "a failed socket makes the run not ok");
});

test("source errors with a note are reported and are no failure; others are", () => {
  const noted = [
    new NetnsNotFoundError("gone-ns", "cannot open"),
    new NotANetnsError("half-added", "plain-file"),
  ];
  const ok = new BackendTerminator(
    { conntrack: false, onePass: "off" },
    seam({ "(host)": { sockets: clients(1) }, a: { sockets: clients(1) } }, noted),
  ).terminate(backend);
  assert.equal(ok.total.destroyed, 2);
  assert.deepEqual(ok.failures, []);
  assert.deepEqual(
    ok.notes.map((n) => [n.netns, n.skipped]),
    [
      ["gone-ns", "vanished"],
      ["half-added", "plain-file"],
    ],
  );
  assert.equal(ok.ok, true);
  const bad = new BackendTerminator(
    { conntrack: false, onePass: "off" },
    seam({ "(host)": { sockets: clients(1) }, a: { sockets: clients(1) } }, [
      new NotANetnsError("dev", "special-file"),
    ]),
  ).terminate(backend);
  assert.deepEqual(
    bad.failures.map((e) => e.error.name),
    ["NotANetnsError"],
  );
  assert.deepEqual(bad.notes, []);
  assert.equal(bad.ok, false);
});

test("a namespace whose dump fails after destroying began keeps its counts in the total", () => {
  // The IPv4 dump lists and destroys its sockets; the v4-mapped dump breaks after 2 of 4.
  const report = new BackendTerminator(
    { conntrack: false },
    seam({
      "(host)": { sockets: [] },
      a: { sockets: [...clients(3), ...clients(4, 53, "inet6")], dumpFailsAfter: 2 },
    }),
  ).terminate(backend);
  const a = report.namespaces[1]!;
  assert.equal(a.error?.name, "NetlinkError");
  assert.match(a.error?.message ?? "", /EIO/);
  assert.ok(a.report && a.report.matched > 0, "what the namespace did before it failed is reported");
  assert.deepEqual(report.total, pick(a.report!), "the host had nothing: the total is a's");
  assert.ok(balanced(report.total));
  assert.equal(report.ok, false);
});

/** A report's tally fields. */
function pick(t: Tally): Tally {
  const { matched, destroyed, wouldDestroy, gone, failed, skipped } = t;
  return { matched, destroyed, wouldDestroy, gone, failed, skipped };
}

test("several backends: each backend's total sums its namespaces, and they sum to the run's", () => {
  const both = () => ({ sockets: [...clients(1, 53), ...clients(1, 54)] });
  const report = new BackendTerminator(
    { conntrack: false },
    seam({ "(host)": both(), a: both(), b: both() }),
  ).terminateMany([
    { address: "10.0.0.5", port: 53 },
    { address: "10.0.0.5", port: 54 },
  ]);
  assert.deepEqual(
    report.backends.map((b) => b.total.destroyed),
    [3, 3],
  );
  assert.equal(report.total.destroyed, 6);
  for (const n of report.namespaces)
    assert.deepEqual(
      n.backends.map((t) => t.matched),
      [1, 1],
    );
});

test("a source that lists plain Errors still gets its report: each becomes a namespace failure", () => {
  const plain = new Error("cannot read /run/custom-netns");
  const report = new BackendTerminator(
    { conntrack: false },
    {
      open: new FakeKernel({ "(host)": {} }).open,
      targets: targetsFrom(() => ({
        failures: [plain] as unknown as NamespaceFailure[],
        *[Symbol.iterator]() {},
      })),
    },
  ).terminate(backend);
  assert.equal(report.failures.length, 1);
  const [failure] = report.failures;
  assert.equal(failure!.netns, "(source)");
  assert.ok(failure!.error instanceof ForeignError);
  assert.equal(failure!.error.cause, plain);
  assert.equal(report.ok, false);
});
