/**
 * The one pass over the worker pool, on the real kernel: the first worker runs the pass once while
 * listing the namespaces; those it rules out are reported from its plan and never entered, and
 * those it keeps (found sockets, a socket in flight to walk) are shared among the workers, each
 * with its verdict. The merged report is the one the sync terminator gives (namespaces, counts,
 * how each was decided, the pass's summary), and the sockets destroyed are the same. The pass's log
 * line comes before any namespace is told of, and the ruled-out ones are told before the workers
 * enter any, as one thread tells them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { client, WorkerClient } from "../../src/promises/client.js";
import { terminateShared } from "../../src/promises/pool.js";
import { poolSize } from "../../src/schedule/index.js";
import { AF_INET, close } from "../../src/sys/socket.js";
import { BackendTerminator, type BatchTerminationReport } from "../../src/terminator/index.js";
import { connectedUdpIn, describeAsRoot, withNetns } from "../kit/index.js";
import { ECONNABORTED, errorsOf, type Held, holdIn, PORT, V4 } from "../terminator/one-pass-holder.js";

const SCENE: Record<string, string[]> = {
  found: ["v4", "other"],
  mapped: ["v4m"],
  flight: ["flight"],
  empty: [],
  elsewhere: ["other"],
};

const backends = [{ address: V4, port: PORT }];
const config = { discover: false, conntrack: false, onePass: "on" } as const;

/** Each namespace of the report as the comparison takes it (the scene's, by label). */
function byLabel(report: BatchTerminationReport, names: Record<string, string>) {
  const out: Record<string, unknown> = {};
  for (const [label, name] of Object.entries(names)) {
    const n = report.namespaces.find((x) => x.netns === name);
    const r = n?.report;
    out[label] = n && {
      how: n.onePass,
      ruledOut: n.ruledOut ?? false,
      counts: r && [r.matched, r.wouldDestroy, r.destroyed, r.gone, r.failed.length],
    };
  }
  return out;
}

describeAsRoot("the one pass over the worker pool", () => {
  test("the pass runs once, the namespaces it keeps are shared by the workers, the report is the sync one's", async () => {
    assert.ok(poolSize() >= 2, `this test needs two cores (${poolSize()})`);
    await withNetns(Object.keys(SCENE).length, async (nss) => {
      const held: Record<string, Held> = {};
      const names: Record<string, string> = {};
      const second = new WorkerClient();
      try {
        for (const [i, [label, kinds]] of Object.entries(SCENE).entries()) {
          const ns = nss[i]!;
          await ns.ip("link", "set", "lo", "up");
          names[label] = ns.name;
          if (kinds.length > 0) held[label] = await holdIn(ns, kinds);
        }
        const ran: number[] = [];
        const workers = (i: number) => {
          ran.push(i);
          return i === 0 ? client : second;
        };
        const dry = { ...config, dryRun: true };
        const pooled = await terminateShared(dry, backends, {}, {}, workers);
        const alone = new BackendTerminator(dry).terminateMany(backends);
        assert.equal(pooled.onePass?.used, true, pooled.onePass?.message);
        assert.deepEqual(pooled.onePass, alone.onePass);
        assert.deepEqual(byLabel(pooled, names), byLabel(alone, names));
        assert.deepEqual(
          Object.fromEntries(
            Object.entries(byLabel(pooled, names)).map(([k, v]) => [
              k,
              (v as { ruledOut: boolean }).ruledOut,
            ]),
          ),
          { found: false, mapped: false, flight: false, empty: true, elsewhere: true },
        );
        assert.deepEqual(pooled.total, alone.total);
        assert.equal(pooled.ok, true);
        // The kept namespaces went to both workers; the ruled-out ones to none.
        assert.deepEqual([...new Set(ran)].sort(), [0, 1]);

        const done = await terminateShared(config, backends, {}, {}, workers);
        assert.equal(done.total.destroyed, alone.total.wouldDestroy);
        assert.deepEqual(await errorsOf(held.found!), [
          ["v4", ECONNABORTED],
          ["other", 0],
        ]);
        assert.deepEqual(await errorsOf(held.mapped!), [["v4m", ECONNABORTED]]);
        assert.deepEqual(await errorsOf(held.flight!), [["flight", ECONNABORTED]]);
        assert.deepEqual(await errorsOf(held.elsewhere!), [["other", 0]]);
      } finally {
        for (const h of Object.values(held)) h.child.kill();
      }
    });
  });

  test("the pass's log line first, then the ruled-out namespaces, then those entered", async () => {
    await withNetns(2, async ([found, empty]) => {
      const fd = connectedUdpIn(found!.path, AF_INET, V4, PORT);
      try {
        const events: string[] = [];
        const report = await terminateShared(
          {
            ...config,
            dryRun: true,
            logger: { info: (message) => void events.push(message), warn: () => {} },
            onNamespace: (result) => void events.push(result.ruledOut ? "ruled out" : "entered"),
          },
          backends,
          {},
          {},
        );
        assert.equal(report.onePass?.used, true, report.onePass?.message);
        assert.ok(report.namespaces.some((n) => n.netns === empty!.name && n.ruledOut));
        assert.ok(report.namespaces.some((n) => n.netns === found!.name && !n.ruledOut));
        const told = events.filter((e) => e === "one pass" || e === "ruled out" || e === "entered");
        assert.equal(told[0], "one pass", events.join(", "));
        const firstEntered = told.indexOf("entered");
        assert.ok(firstEntered > 0, events.join(", "));
        assert.ok(
          told.lastIndexOf("ruled out") < firstEntered,
          `ruled out before entered: ${told.join(", ")}`,
        );
      } finally {
        close(fd);
      }
    });
  });
});
