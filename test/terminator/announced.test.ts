/**
 * The terminator's look-ahead over a namespace walk: each target is announced one step before it
 * is visited (further while the ones announced have nothing to walk), the targets visited carry
 * copies of the walk's handles (a walk closes its own as it advances), and every copy is closed
 * once the loop moves on or stops.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { current, type NetNS, type Target } from "../../src/netns/index.js";
import { announced, type LookAhead } from "../../src/terminator/sources.js";

/** A walk of `labels` that lends each handle until it advances, as netns walks do. */
function* lending(labels: readonly string[], lent: NetNS[]): Generator<Target> {
  for (const label of labels) {
    using netns = current();
    lent.push(netns);
    yield { netns, ref: netns.ref, label };
  }
}

test("each target is announced before the one ahead of it is visited, on handles of its own", () => {
  const events: string[] = [];
  const yielded: Target[] = [];
  const lent: NetNS[] = [];
  const ahead = (next: Target) => {
    events.push(`ahead ${next.label}`);
    return false;
  };
  for (const t of announced(lending(["a", "b", "c"], lent), ahead)) {
    events.push(`visit ${t.label}`);
    assert.equal(t.netns?.closed, false, "the visited target's handle is open");
    yielded.push(t);
  }
  assert.deepEqual(events, ["ahead a", "ahead b", "visit a", "ahead c", "visit b", "visit c"]);
  assert.ok(lent.every((h) => h.closed));
  assert.ok(yielded.every((t) => t.netns?.closed === true && !lent.includes(t.netns)));
});

test("a loop that stops early leaves no copy open", () => {
  const yielded: Target[] = [];
  const announcedTargets: Target[] = [];
  const ahead = (next: Target) => {
    announcedTargets.push(next);
    return false;
  };
  for (const t of announced(lending(["a", "b", "c"], []), ahead)) {
    yielded.push(t);
    break;
  }
  assert.deepEqual(
    yielded.map((t) => t.label),
    ["a"],
  );
  assert.deepEqual(
    announcedTargets.map((t) => [t.label, t.netns?.closed]),
    [
      ["a", true],
      ["b", true],
    ],
  );
});

test("the caller's own namespace (no handle) is announced and visited like the others", () => {
  const host: Target = { netns: undefined, ref: undefined, label: undefined };
  const events: string[] = [];
  const ahead = (next: Target) => {
    events.push(`ahead ${next.label ?? "(host)"}`);
    return false;
  };
  for (const t of announced([host], ahead)) events.push(`visit ${t.label ?? "(host)"}`);
  assert.deepEqual(events, ["ahead (host)", "visit (host)"]);
});

/**
 * The announcements and visits of a walk of `labels` where those in `idle` hold nothing to walk;
 * every visited target's handle is checked open while it is visited.
 */
function walkOrder(labels: readonly string[], idle: ReadonlySet<string>, options: LookAhead) {
  const events: string[] = [];
  const lent: NetNS[] = [];
  const visited: Target[] = [];
  const ahead = (next: Target) => {
    events.push(`ahead ${next.label}`);
    return idle.has(next.label!);
  };
  for (const t of announced(lending(labels, lent), ahead, options)) {
    events.push(`visit ${t.label}`);
    assert.equal(t.netns?.closed, false);
    visited.push(t);
  }
  return { events, lent, visited };
}

test("past namespaces with nothing to walk, the next one that has is announced, up to the depth", () => {
  const { events, lent, visited } = walkOrder(["a", "b", "c", "d", "e", "f"], new Set(["b", "c", "d"]), {
    depth: 4,
  });
  assert.deepEqual(events, [
    // a's neighbours hold nothing: four are pulled (the depth) before a is visited
    "ahead a",
    "ahead b",
    "ahead c",
    "ahead d",
    "visit a",
    // d held nothing either: e is announced before b is visited, and has a walk in flight
    "ahead e",
    "visit b",
    "visit c",
    "visit d",
    "ahead f",
    "visit e",
    "visit f",
  ]);
  assert.ok(lent.every((h) => h.closed));
  assert.ok(visited.every((t) => t.netns?.closed === true));
});

test("a target that is not copied (the look-ahead not wanted) is visited before the next is pulled", () => {
  const events: string[] = [];
  const lent: NetNS[] = [];
  let wanted = false;
  const ahead = (next: Target) => {
    events.push(`ahead ${next.label}`);
    return true;
  };
  for (const t of announced(lending(["a", "b", "c", "d"], lent), ahead, { wanted: () => wanted })) {
    events.push(`visit ${t.label}`);
    assert.equal(t.netns?.closed, false, "a lent handle is open while visited");
    wanted = t.label === "a";
  }
  // after a, copies are wanted: b and c (b idle) pulled, then c idle too, then d; the walk ends
  assert.deepEqual(events, ["visit a", "ahead b", "ahead c", "ahead d", "visit b", "visit c", "visit d"]);
});

test("with two walks wanted, two targets after the one visited have theirs in flight", () => {
  const { events, lent } = walkOrder(["a", "b", "c", "d", "e"], new Set(["c"]), { walks: 2 });
  // c holds nothing: it does not count among the two, so d is announced too before a is visited
  assert.equal(
    events.join(", "),
    "ahead a, ahead b, ahead c, ahead d, visit a, ahead e, visit b, visit c, visit d, visit e",
  );
  assert.ok(lent.every((h) => h.closed));
});
