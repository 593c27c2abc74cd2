/**
 * What a termination does in one namespace (step.ts), without a kernel: whatever its destroy
 * throws, the step returns that namespace's result — an error it records, a stop by the caller's
 * signal with the counts so far — and the run adds results up into a balanced report.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Target } from "../../src/netns/index.js";
import { AbortError, emptyTally } from "../../src/run/index.js";
import type { OutcomeListener } from "../../src/sockets/destroyer.js";
import { type DestroyReport, emptyReport } from "../../src/sockets/index.js";
import { ForeignError } from "../../src/sys/errors.js";
import { BackendSet } from "../../src/terminator/backend-set.js";
import { addNamespace, emptyBatchReport, reportOk } from "../../src/terminator/report.js";
import { NamespaceTermination } from "../../src/terminator/step.js";

/** The lists a namespaced report adds to a destroy's counts, empty. */
const namespaced = { namespaces: [], failures: [], notes: [], callbackErrors: [] };
const host: Target = { netns: undefined, ref: undefined, label: undefined };
const set = new BackendSet([{ address: "10.0.0.5", port: 53 }], "udp");

/**
 * A step whose destroy is `runIn` (answering a report without the walk's lists, or throwing; told
 * each socket's outcome as the sockets library tells it).
 */
function stepOf(
  runIn: (onOutcome: OutcomeListener) => DestroyReport,
  logged: string[] = [],
): NamespaceTermination {
  const destroy = {
    runIn: (_: Target, onOutcome: OutcomeListener) => ({ ...namespaced, ...runIn(onOutcome) }),
  };
  return new NamespaceTermination(set, destroy, undefined, false, (level, message) => {
    logged.push(`${level} ${message}`);
  });
}

test("a destroy that throws what no namespace throws is that namespace's error, not the run's", () => {
  const logged: string[] = [];
  const step = stepOf(() => {
    throw "not an Error";
  }, logged);
  const { result, stopped } = step.runIn(host, undefined, false);
  assert.equal(stopped, undefined);
  assert.ok(result?.error instanceof ForeignError);
  assert.deepEqual(logged, ["warn namespace failed"]);
  const report = emptyBatchReport(set.backends, false);
  addNamespace(report, result!, undefined);
  assert.equal(reportOk(report), false);
  assert.deepEqual(report.total, emptyTally());
});

test("the signal stopping a namespace part-way returns its counts so far, and stops the run", () => {
  const controller = new AbortController();
  const partial = { ...emptyReport(false), matched: 3, destroyed: 2, skipped: 1, failures: [] };
  const socket = { family: "inet", protocol: "udp", dst: "10.0.0.5", dport: 53 } as never;
  const step = stepOf((onOutcome) => {
    onOutcome(socket, "destroyed");
    onOutcome(socket, "destroyed");
    onOutcome(socket, "skipped");
    const err = new AbortError(controller.signal);
    err.report = partial;
    throw err;
  });
  const { result, stopped } = step.runIn(host, undefined, false);
  assert.ok(stopped instanceof AbortError);
  const report = emptyBatchReport(set.backends, false);
  addNamespace(report, result!, undefined);
  assert.deepEqual(
    [report.total.matched, report.total.destroyed, report.total.skipped],
    [3, 2, 1],
    "the namespace's counts are in the total",
  );
  assert.deepEqual(report.backends[0]!.total, report.total);
});

test("a signal already aborted returns no result: nothing was done there", () => {
  const controller = new AbortController();
  controller.abort();
  let called = false;
  const step = stepOf(() => {
    called = true;
    return emptyReport(false);
  });
  const { result, stopped } = step.runIn(host, undefined, false, controller.signal);
  assert.deepEqual([result, stopped instanceof AbortError, called], [undefined, true, false]);
});

test("a namespace after the kernel showed it cannot destroy is skipped, its destroy not asked", () => {
  const step = stepOf(() => assert.fail("no destroy once the kernel cannot"));
  const { result } = step.runIn(host, undefined, true);
  assert.deepEqual([result?.netns, result?.skipped, result?.report], ["(host)", true, undefined]);
});
