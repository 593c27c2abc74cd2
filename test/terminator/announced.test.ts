/**
 * The terminator's look-ahead over a namespace walk: each target is announced one step before it
 * is visited, the targets visited carry copies of the walk's handles (a walk closes its own as it
 * advances), and every copy is closed once the loop moves on or stops.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { current, type NetNS, type Target } from "../../src/netns/index.js";
import { announced } from "../../src/terminator/sources.js";

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
  for (const t of announced(lending(["a", "b", "c"], lent), (next) => events.push(`ahead ${next.label}`))) {
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
  for (const t of announced(lending(["a", "b", "c"], []), (next) => announcedTargets.push(next))) {
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
  for (const t of announced([host], (next) => events.push(`ahead ${next.label ?? "(host)"}`)))
    events.push(`visit ${t.label ?? "(host)"}`);
  assert.deepEqual(events, ["ahead (host)", "visit (host)"]);
});
