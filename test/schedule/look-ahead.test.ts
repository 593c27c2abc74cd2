/**
 * The schedules over a namespace walk, with a step of its own (no kernel): the look-ahead opens
 * each namespace and sends its walk one step before its turn (further while the ones opened hold
 * nothing to walk, up to the depth), only once the last step with something to walk took long
 * enough; the namespaces run carry copies of the walk's handles (a walk closes its own as it
 * advances), and every copy and every scan opened ahead is closed once the loop moves on or stops.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { current, type NetNS, type Target } from "../../src/netns/index.js";
import {
  drain,
  type LookAheadFigures,
  lookAhead,
  type NamespaceStep,
  scheduleFor,
  serial,
} from "../../src/schedule/index.js";

/** A walk of `labels` that lends each handle until it advances, as netns walks do. */
function* lending(labels: readonly string[], lent: NetNS[]): Generator<Target> {
  for (const label of labels) {
    using netns = current();
    lent.push(netns);
    yield { netns, ref: netns.ref, label };
  }
}

/** A scan a test's step opens: it only knows whether it was closed. */
class FakeScan implements Disposable {
  closed = 0;
  constructor(readonly label: string) {}
  [Symbol.dispose](): void {
    this.closed++;
  }
}

interface Walked {
  events: string[];
  lent: NetNS[];
  ran: Target[];
  scans: FakeScan[];
  results: string[];
}

/**
 * A walk of `labels` under `figures`, where those in `idle` hold nothing to walk; each step takes
 * `stepMs(label)` on the test's clock, and every target run is checked open while it runs.
 */
function walk(
  labels: readonly string[],
  figures: LookAheadFigures,
  {
    idle = new Set<string>(),
    stepMs = () => 0,
  }: { idle?: Set<string>; stepMs?: (label: string) => number } = {},
): Walked {
  const w: Walked = { events: [], lent: [], ran: [], scans: [], results: [] };
  let clock = 0;
  const step: NamespaceStep<string, FakeScan> = {
    open: (target) => {
      const scan = new FakeScan(target.label!);
      w.scans.push(scan);
      return scan;
    },
    sendAhead: (scan) => {
      w.events.push(`ahead ${scan.label}`);
      return idle.has(scan.label);
    },
    // biome-ignore lint/correctness/useYield: a step that never pauses
    run: function* (target, opened) {
      assert.equal(target.netns?.closed, false, "the target run has an open handle");
      if (opened) assert.equal(opened.label, target.label);
      w.events.push(`run ${target.label}${opened ? "" : " (opened now)"}`);
      w.ran.push(target);
      opened?.[Symbol.dispose]();
      clock += stepMs(target.label!);
      return `result ${target.label}`;
    },
  };
  const schedule = lookAhead({ now: () => clock, ...figures });
  drain(schedule.run(lending(labels, w.lent), step, { done: (r) => w.results.push(r) }));
  return w;
}

const always = { afterMs: 0 };

test("each namespace is opened and sent ahead before the one before it runs, on handles of its own", () => {
  const w = walk(["a", "b", "c"], { ...always, walks: 1 });
  assert.deepEqual(w.events, ["ahead a", "ahead b", "run a", "ahead c", "run b", "run c"]);
  assert.deepEqual(w.results, ["result a", "result b", "result c"]);
  assert.ok(w.lent.every((h) => h.closed));
  assert.ok(w.ran.every((t) => t.netns?.closed === true && !w.lent.includes(t.netns)));
  assert.ok(w.scans.every((s) => s.closed === 1));
});

test("a step that throws ends the schedule, and leaves no copy and no scan opened ahead open", () => {
  const opened: FakeScan[] = [];
  const ran: Target[] = [];
  const step: NamespaceStep<void, FakeScan> = {
    open: (target) => {
      const scan = new FakeScan(target.label!);
      opened.push(scan);
      return scan;
    },
    sendAhead: () => false,
    // biome-ignore lint/correctness/useYield: a step that never pauses
    run: function* (target, scan) {
      ran.push(target);
      scan?.[Symbol.dispose]();
      throw new Error("stop");
    },
  };
  const schedule = lookAhead({ walks: 1, afterMs: 0 });
  assert.throws(() => drain(schedule.run(lending(["a", "b", "c"], []), step, { done() {} })), /stop/);
  assert.deepEqual(
    ran.map((t) => [t.label, t.netns?.closed]),
    [["a", true]],
  );
  assert.deepEqual(
    opened.map((s) => [s.label, s.closed]),
    [
      ["a", 1],
      ["b", 1],
    ],
  );
});

test("the caller's own namespace (no handle) is opened ahead and run like the others", () => {
  const host: Target = { netns: undefined, ref: undefined, label: undefined };
  const events: string[] = [];
  const step: NamespaceStep<void, FakeScan> = {
    open: () => new FakeScan("(host)"),
    sendAhead: (scan) => {
      events.push(`ahead ${scan.label}`);
      return false;
    },
    // biome-ignore lint/correctness/useYield: a step that never pauses
    run: function* (target, scan) {
      events.push(`run ${target.label ?? "(host)"} on ${scan?.label}`);
    },
  };
  drain(lookAhead({ walks: 1, afterMs: 0 }).run([host], step, { done() {} }));
  assert.deepEqual(events, ["ahead (host)", "run (host) on (host)"]);
});

test("past namespaces with nothing to walk, the next one that has is sent ahead, up to the depth", () => {
  const w = walk(
    ["a", "b", "c", "d", "e", "f"],
    { ...always, walks: 1, depth: 4 },
    { idle: new Set(["b", "c", "d"]) },
  );
  assert.deepEqual(w.events, [
    // a's neighbours hold nothing: four are opened (the depth) before a runs
    "ahead a",
    "ahead b",
    "ahead c",
    "ahead d",
    "run a",
    // d held nothing either: e is sent ahead before b runs, and has a walk in flight
    "ahead e",
    "run b",
    "run c",
    "run d",
    "ahead f",
    "run e",
    "run f",
  ]);
  assert.ok(w.lent.every((h) => h.closed));
  assert.ok(w.ran.every((t) => t.netns?.closed === true));
});

test("the look-ahead turns on once a step with something to walk took AHEAD_AFTER_MS, and off again", () => {
  // a takes 5 ms: b and c are sent ahead; b takes 1 ms: d, pulled after it, is not; d takes 4 ms: e is
  const ms: Record<string, number> = { a: 5, b: 1, c: 0, d: 4, e: 0 };
  const w = walk(["a", "b", "c", "d", "e"], { walks: 1 }, { stepMs: (l) => ms[l]! });
  assert.deepEqual(w.events, [
    "run a (opened now)",
    "ahead b",
    "ahead c",
    "run b",
    "run c",
    "run d (opened now)",
    "ahead e",
    "run e",
  ]);
  const short = walk(["a", "b", "c"], { walks: 1 }, { stepMs: () => 2 });
  assert.deepEqual(short.events, ["run a (opened now)", "run b (opened now)", "run c (opened now)"]);
  assert.ok(short.lent.every((h) => h.closed));
});

test("with two walks wanted, two namespaces after the one run have theirs in flight", () => {
  const w = walk(["a", "b", "c", "d", "e"], { ...always, walks: 2 }, { idle: new Set(["c"]) });
  // c holds nothing: it does not count among the two, so d is sent ahead too before a runs
  assert.equal(
    w.events.join(", "),
    "ahead a, ahead b, ahead c, ahead d, run a, ahead e, run b, run c, run d, run e",
  );
  assert.ok(w.lent.every((h) => h.closed));
});

test("a namespace that cannot be opened ahead is left to its step, and the rest go on", () => {
  const events: string[] = [];
  const step: NamespaceStep<void, FakeScan> = {
    open: (target) => {
      if (target.label === "b") throw new Error("cannot open b");
      return new FakeScan(target.label!);
    },
    sendAhead: (scan) => {
      events.push(`ahead ${scan.label}`);
      return false;
    },
    // biome-ignore lint/correctness/useYield: a step that never pauses
    run: function* (target, scan) {
      events.push(`run ${target.label}${scan ? "" : " (opened now)"}`);
    },
  };
  drain(lookAhead({ walks: 1, afterMs: 0 }).run(lending(["a", "b", "c"], []), step, { done() {} }));
  // b counts as a walk in flight, so c is sent ahead only once a is over; b is opened when it runs
  assert.deepEqual(events, ["ahead a", "run a", "ahead c", "run b (opened now)", "run c"]);
});

test("one core, or a step that cannot send ahead, runs each namespace in turn", () => {
  assert.equal(scheduleFor(1), serial);
  assert.notEqual(scheduleFor(2), serial);
  const events: string[] = [];
  const step: NamespaceStep<string, FakeScan> = {
    // biome-ignore lint/correctness/useYield: a step that never pauses
    run: function* (target, scan) {
      events.push(`run ${target.label}${scan ? " ahead" : ""}`);
      return target.label!;
    },
  };
  const results: string[] = [];
  drain(scheduleFor(4).run(lending(["a", "b"], []), step, { done: (r) => results.push(r) }));
  assert.deepEqual(
    [events, results],
    [
      ["run a", "run b"],
      ["a", "b"],
    ],
  );
});
