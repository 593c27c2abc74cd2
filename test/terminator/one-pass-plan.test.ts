/**
 * The one pass's plan on its own, on the real kernel: a namespace whose counters and conntrack
 * count cannot be read is walked and its conntrack looked at, its note saying why; a count the
 * plan read is handed to the conntrack scan, which does not read it again. The counters' files kept
 * open for the read after the pass are closed by the verdict, the plan's disposal, or a failed pass.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { planConntrack } from "../../src/conntrack/query.js";
import { ConntrackScan } from "../../src/conntrack/scan.js";
import { fromPath } from "../../src/netns/index.js";
import { countersOf, decideOnePass, OnePassPlan, readCounters } from "../../src/terminator/one-pass.js";
import { describeAsRoot, insertConntrack, withNetns } from "../kit/index.js";

describeAsRoot("the one pass's plan", () => {
  test("counters and a conntrack count that cannot be read: walked, conntrack looked at, the note says why", async () => {
    await withNetns(1, async ([scratch]) => {
      const ns = fromPath(scratch!.path);
      ns.close();
      const target = { netns: ns, ref: undefined, label: "closed" };
      const plan = new OnePassPlan([], new Map(), countersOf([target], true), true);
      const verdict = plan.verdict(target);
      assert.equal(verdict.sockets, "walk");
      assert.equal(verdict.conntrack, true);
      assert.equal(verdict.entries, undefined);
      assert.match(verdict.how, /^its counters cannot be read \(.*\): walked/);
      assert.match(verdict.how, /; its conntrack count cannot be read \(.*after close.*\): looked at$/);
    });
  });

  test("a namespace's conntrack count is read from the file its counters keep open: not entered again", async () => {
    await withNetns(1, async ([scratch]) => {
      const ns = fromPath(scratch!.path);
      const target = { netns: ns, ref: undefined, label: "scratch" };
      insertConntrack(scratch!.path, [
        { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1000, dport: 53 } },
      ]);
      const counters = countersOf([target], true);
      readCounters(counters);
      // Closed: the plan cannot enter it any more, so a count it gives came from the kept file.
      ns.close();
      insertConntrack(scratch!.path, [
        { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1001, dport: 53 } },
      ]);
      using plan = new OnePassPlan([], new Map(), counters, true);
      const verdict = plan.verdict(target);
      assert.equal(verdict.sockets, "none", verdict.how);
      assert.equal(verdict.conntrack, true);
      assert.equal(verdict.entries, 2, "the count as it is at the verdict, not as before the pass");
      assert.doesNotMatch(verdict.how, /cannot be read/);
    });
  });

  test("a conntrack count read already is the scan's count: not read again on entering", () => {
    const host = { netns: undefined, ref: undefined, label: undefined };
    // No namespace holds exactly this many entries here: a count read again would differ.
    using scan = new ConntrackScan(host, planConntrack({}), undefined, 987_654_321);
    assert.equal(scan.count(), 987_654_321);
    assert.equal(scan.empty, false);
    using none = new ConntrackScan(host, planConntrack({}), undefined, 0);
    assert.equal(none.empty, true);
  });

  test("the counters' files: open from before the pass to the verdict, all closed after a plan or a failed pass", async () => {
    await withNetns(1, async ([scratch]) => {
      using ns = fromPath(scratch!.path);
      const host = { netns: undefined, ref: undefined, label: undefined };
      const other = { netns: ns, ref: undefined, label: "scratch" };
      const open = () => readdirSync("/proc/self/fd").length;
      const fds = open();
      const counters = countersOf([host, other], false);
      assert.equal(counters.size, 2);
      for (const c of counters.values()) assert.ok(!(c instanceof Error), String(c));
      assert.ok(open() >= fds + 2, "the counters' files are kept open for the read after");
      {
        using plan = new OnePassPlan([], new Map(), counters, false);
        const kept = open();
        assert.notEqual(plan.verdict(other).sockets, undefined);
        assert.ok(open() < kept, "judged: its files closed");
      }
      assert.equal(open(), fds);

      let before = 0;
      assert.throws(
        () =>
          decideOnePass(
            { mode: "on", backends: [], all: true, seam: false, conntrack: false },
            () => {
              before++;
              return countersOf([host, other], false);
            },
            () => {
              throw new Error("the pass failed");
            },
          ),
        { name: "OnePassUnavailableError" },
      );
      assert.equal(before, 1, "the counters were read before the pass");
      assert.equal(open(), fds);
    });
  });
});
