/**
 * The terminator's report logic without root: injected namespaces (handles of this process's own
 * namespace, which anyone may open) and an injected destroyer with scripted answers. Totals are the
 * sum of the namespaces, every count balances, a note is no failure, and a namespace that fails
 * after destroying began keeps what it did.
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
import type { DestroyReport } from "../../src/sockets/index.js";
import { ForeignError } from "../../src/sys/errors.js";
import { BackendTerminator, type SocketsDestroyer, type TerminatorSeam } from "../../src/terminator/index.js";
import { type NamespaceSource, targetsFrom } from "./seam.js";

/** A report with these counts; `failed` fills the failure list with placeholder entries. */
function answer(
  matched: number,
  destroyed: number,
  gone: number,
  failed: number,
  skipped: number,
): DestroyReport {
  const failures = Array.from({ length: failed }, () => ({
    socket: {} as never,
    errno: 16,
    code: "EBUSY",
    message: "busy",
  }));
  return { matched, destroyed, wouldDestroy: 0, gone, failed: failures, skipped, stops: [], dryRun: false };
}

/**
 * The seam of a scripted destroyer and a source of `names` after the host, each lent a handle of
 * our own namespace, with `errors` met on the way (failures, or notes where the walk would note them).
 */
function seam(destroy: SocketsDestroyer, names: string[], errors: NetnsError[] = []): TerminatorSeam {
  const failures: NamespaceFailure[] = [];
  const notes: NamespaceNote[] = [];
  for (const error of errors) recordNetnsError(error, error.netns, failures, notes);
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
  return { destroy, targets: targetsFrom(source) };
}

const balanced = (t: Tally) =>
  t.matched === t.destroyed + t.wouldDestroy + t.gone + t.failed.length + t.skipped;

test("the total is the sum of the namespaces, and every count balances", () => {
  const answers = [answer(5, 3, 1, 1, 0), answer(4, 4, 0, 0, 0), answer(2, 0, 0, 0, 2)];
  let call = 0;
  const destroy: SocketsDestroyer = () => answers[call++]!;
  const report = new BackendTerminator({ conntrack: false }, seam(destroy, ["a", "b"])).terminate({
    address: "10.0.0.5",
    port: 53,
  });
  assert.deepEqual(
    report.namespaces.map((n) => n.netns),
    ["(host)", "a", "b"],
  );
  assert.deepEqual(report.total, {
    matched: 11,
    destroyed: 7,
    wouldDestroy: 0,
    gone: 1,
    failed: answers[0]!.failed,
    skipped: 2,
  });
  assert.ok(balanced(report.total));
  assert.equal(report.ok, false, "a failed socket makes the run not ok");
});

test("source errors with a note are reported and are no failure; others are", () => {
  const destroy: SocketsDestroyer = () => answer(1, 1, 0, 0, 0);
  const noted = [
    new NetnsNotFoundError("gone-ns", "cannot open"),
    new NotANetnsError("half-added", "plain-file"),
  ];
  const ok = new BackendTerminator({ conntrack: false }, seam(destroy, ["a"], noted)).terminate({
    address: "10.0.0.5",
    port: 53,
  });
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
    { conntrack: false },
    seam(destroy, ["a"], [new NotANetnsError("dev", "special-file")]),
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.deepEqual(
    bad.failures.map((e) => e.error.name),
    ["NotANetnsError"],
  );
  assert.deepEqual(bad.notes, []);
  assert.equal(bad.ok, false);
});

test("a namespace that failed after destroying began keeps its counts in the total", () => {
  const failure: NamespaceFailure = { netns: "a", error: new ForeignError(new Error("EMFILE")) };
  let call = 0;
  const destroy: SocketsDestroyer = () =>
    call++ === 0 ? answer(0, 0, 0, 0, 0) : { ...answer(6, 4, 0, 2, 0), failures: [failure] };
  const report = new BackendTerminator({ conntrack: false }, seam(destroy, ["a"])).terminate({
    address: "10.0.0.5",
    port: 53,
  });
  assert.equal(report.namespaces[1]?.error?.message, "EMFILE");
  assert.deepEqual(
    { ...report.total, failed: report.total.failed.length },
    {
      matched: 6,
      destroyed: 4,
      wouldDestroy: 0,
      gone: 0,
      failed: 2,
      skipped: 0,
    },
  );
  assert.equal(report.ok, false);
});

test("several backends: each backend's total sums its namespaces, and they sum to the run's", () => {
  const destroy: SocketsDestroyer = (query) => {
    // Two sockets per namespace, one per backend, as the destroyer would tell them.
    const r = answer(2, 2, 0, 0, 0);
    const s = (dport: number) => ({ family: "inet", protocol: "udp", dst: "10.0.0.5", dport }) as never;
    query.onOutcome?.(s(53), "destroyed");
    query.onOutcome?.(s(54), "destroyed");
    return r;
  };
  const report = new BackendTerminator({ conntrack: false }, seam(destroy, ["a", "b"])).terminateMany([
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
      destroy: () => answer(0, 0, 0, 0, 0),
      targets: targetsFrom(() => ({
        failures: [plain] as unknown as NamespaceFailure[],
        *[Symbol.iterator]() {},
      })),
    },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(report.failures.length, 1);
  const [failure] = report.failures;
  assert.equal(failure!.netns, "(source)");
  assert.ok(failure!.error instanceof ForeignError);
  assert.equal(failure!.error.cause, plain);
  assert.equal(report.ok, false);
});
