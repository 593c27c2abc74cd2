/**
 * Reports of threads that each visited a share of the namespaces merge into the report one thread
 * gives: the same namespaces in the walk's order, the same totals per backend and in all, every
 * count balanced, a failure in one share kept beside the others' results.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Target } from "../../src/netns/index.js";
import { current } from "../../src/netns/index.js";
import { mergeReports } from "../../src/promises/merge.js";
import type { Tally } from "../../src/run/index.js";
import { ForeignError } from "../../src/sys/errors.js";
import { BackendTerminator } from "../../src/terminator/index.js";
import { FakeKernel, type FakeNamespace } from "../kit/fake-kernel.js";

const names = ["a", "b", "c", "d", "e"];

/**
 * A fake kernel where namespace i holds 2 + i UDP clients, alternately of 10.0.0.5:53 and :54; b's
 * dump breaks half way (EIO), after it listed 2.
 */
function kernel(): FakeKernel {
  let cookie = 0;
  const namespaces: Record<string, FakeNamespace> = {};
  names.forEach((name, i) => {
    const sockets = Array.from({ length: i + 2 }, (_, k) => ({
      family: "inet" as const,
      protocol: "udp" as const,
      src: "10.0.0.1",
      sport: 40000 + k,
      dst: "10.0.0.5",
      dport: 53 + (k % 2),
      cookie: ++cookie,
    }));
    namespaces[name] = name === "b" ? { sockets, dumpFailsAfter: 2 } : { sockets };
  });
  return new FakeKernel(namespaces);
}

/** Targets of some of the names, each a handle of our own namespace labelled with its name. */
function* targetsOf(which: readonly string[]): Generator<Target> {
  for (const name of which) {
    using netns = current();
    yield { netns, ref: { ...netns.ref, label: name }, label: name };
  }
}

const run = (which: readonly string[]) =>
  new BackendTerminator(
    // As the pool's workers run their shares: a walk.
    { conntrack: false, onePass: "off" },
    { open: kernel().open, targets: () => targetsOf(which) },
  ).terminateMany([
    { address: "10.0.0.5", port: 53 },
    { address: "10.0.0.5", port: 54 },
  ]);

const balanced = (t: Tally) => t.matched === t.destroyed + t.gone + t.failed.length + t.skipped;

test("shares merged give the one-thread report: order, totals per backend and in all, ok", () => {
  const whole = run(names);
  const even = names.filter((_, i) => i % 2 === 0);
  const odd = names.filter((_, i) => i % 2 === 1);
  const merged = mergeReports(
    [
      { report: run(even), places: [0, 2, 4] },
      { report: run(odd), places: [1, 3] },
    ],
    { failures: [], notes: [] },
  );
  assert.deepEqual(
    merged.namespaces.map((n) => [n.netns, n.report?.destroyed, n.error?.message]),
    whole.namespaces.map((n) => [n.netns, n.report?.destroyed, n.error?.message]),
  );
  assert.match(merged.namespaces[1]?.error?.message ?? "", /EIO/, "the failed share's namespace is kept");
  assert.ok((merged.namespaces[1]?.report?.matched ?? 0) > 0, "with what it did before it failed");
  assert.deepEqual(merged.total, whole.total);
  assert.deepEqual(
    merged.backends.map((b) => b.total),
    whole.backends.map((b) => b.total),
  );
  assert.ok(balanced(merged.total));
  assert.equal(merged.ok, whole.ok);
  assert.equal(merged.ok, false);
});

test("the walk's own failures and notes are in the merged report, and a walk failure makes it not ok", () => {
  const failure = { netns: "x", error: new ForeignError(new Error("unreadable pin dir")) };
  const note = { netns: "y", skipped: "vanished" as const, message: "gone" };
  const merged = mergeReports([{ report: run(["a"]), places: [0] }], {
    failures: [failure],
    notes: [note],
  });
  assert.deepEqual(merged.failures, [failure]);
  assert.deepEqual(merged.notes, [note]);
  assert.equal(merged.ok, false);
});
