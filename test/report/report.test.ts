/**
 * The report arithmetic every report shares (src/run/report.ts): counts added over namespaces and
 * backends keep balancing, outcomes are counted once each, and stops are not repeated.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConntrackEntry } from "../../src/ctnl/index.js";
import type { Socket } from "../../src/diag/socket.js";
import {
  addTally,
  type ConntrackFailure,
  countOutcome,
  type DestroyFailure,
  emptyTally,
} from "../../src/run/index.js";
import { addReport, emptyReport } from "../../src/sockets/index.js";

const socket = { protocol: "udp" } as unknown as Socket;
const entry = { protocol: "udp" } as unknown as ConntrackEntry;
const failure = (code: string): DestroyFailure => ({ socket, errno: 1, code, message: code });
const ctFailure: ConntrackFailure = { entry, errno: 16, code: "EBUSY", message: "busy" };

test("countOutcome counts each outcome once, failures with their record, a dry run's as would", () => {
  const c = emptyTally();
  for (const o of ["destroyed", "destroyed", "gone", "skipped", "wouldDestroy"] as const) countOutcome(c, o);
  countOutcome(c, "failed", failure("EPERM"));
  assert.deepEqual(c, {
    matched: 6,
    destroyed: 2,
    wouldDestroy: 1,
    gone: 1,
    failed: [failure("EPERM")],
    skipped: 1,
  });
  const t = emptyTally("deleted");
  countOutcome(t, "deleted");
  countOutcome(t, "wouldDelete");
  countOutcome(t, "failed", ctFailure);
  assert.deepEqual(t, { matched: 3, deleted: 1, wouldDelete: 1, gone: 0, failed: [ctFailure], skipped: 0 });
  assert.equal(t.matched, t.deleted + t.wouldDelete + t.gone + t.failed.length + t.skipped);
});

test("addTally adds every count and keep each failure; the sum balances", () => {
  const a = { matched: 4, destroyed: 1, wouldDestroy: 0, gone: 1, failed: [failure("EPERM")], skipped: 1 };
  const total = emptyTally();
  addTally(total, a);
  addTally(total, { matched: 2, destroyed: 0, wouldDestroy: 2, gone: 0, failed: [], skipped: 0 });
  assert.deepEqual(total, {
    matched: 6,
    destroyed: 1,
    wouldDestroy: 2,
    gone: 1,
    failed: [failure("EPERM")],
    skipped: 1,
  });
  assert.equal(
    total.matched,
    total.destroyed + total.wouldDestroy + total.gone + total.failed.length + total.skipped,
  );
  assert.equal(a.failed.length, 1, "the added report is not changed");
  const ct = emptyTally("deleted");
  addTally(ct, { matched: 3, deleted: 1, wouldDelete: 0, gone: 1, failed: [ctFailure], skipped: 0 });
  addTally(ct, { matched: 2, deleted: 0, wouldDelete: 1, gone: 0, failed: [], skipped: 1 });
  assert.deepEqual(ct, { matched: 5, deleted: 1, wouldDelete: 1, gone: 1, failed: [ctFailure], skipped: 1 });
});

test("addReport keeps one stop per cause", () => {
  const total = emptyReport(false);
  const eperm = { protocol: undefined, code: "EPERM", reason: "needs CAP_NET_ADMIN" };
  const tcp = { protocol: "tcp" as const, code: "EOPNOTSUPP", reason: "no destroy" };
  addReport(total, { ...emptyReport(false), matched: 1, skipped: 1, stops: [eperm] });
  addReport(total, { ...emptyReport(false), matched: 2, skipped: 2, stops: [eperm, tcp] });
  assert.deepEqual(total.stops, [eperm, tcp]);
  assert.equal(total.matched, 3);
  assert.equal(total.skipped, 3);
});
