/**
 * Edges of destroying: a socket listed in another namespace is destroyed there (by its label), a
 * predicate that throws ends a run over every namespace instead of being taken for one namespace's
 * failure.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PredicateError } from "../../src/run/index.js";
import {
  destroySocket,
  destroySockets,
  listSockets,
  type NamespacedDestroyReport,
} from "../../src/sockets/index.js";
import { describeAsRoot, startUdpScene, type UdpScene } from "../kit/index.js";

describeAsRoot("destroy edges", () => {
  let scene: UdpScene;

  before(async () => {
    scene = await startUdpScene("edges");
  });
  after(async () => {
    await scene?.stop();
  });

  test("destroySocket destroys a socket in the namespace it was listed in, found by its label", async () => {
    const [client] = await scene.clients(1);
    const [listed] = listSockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `sport = :${client!.sport}`,
    });
    assert.equal(listed?.netns?.label, scene.ns.name);
    assert.equal(destroySocket(listed!), "destroyed");
    await scene.holder.waitFor([client!], "ECONNABORTED");
  });

  test("a throwing predicate ends a run over every namespace, with the report of what was done", async () => {
    await scene.clients(3);
    const boom = new TypeError("predicate bug");
    let calls = 0;
    assert.throws(
      () =>
        destroySockets({
          netns: "all",
          protocols: ["udp"],
          filter: `dst 127.0.0.1:${scene.receiver.sport}`,
          predicate: () => {
            if (++calls === 3) throw boom;
            return true;
          },
        }),
      (err) => {
        assert.ok(err instanceof PredicateError, String(err));
        assert.equal(err.cause, boom);
        // instanceof narrows a generic class to PredicateError<any>: a destroy's report is this.
        const r: NamespacedDestroyReport = err.report;
        // Both approved sockets were still queued: nothing more is sent after the exception.
        assert.deepEqual([r.matched, r.destroyed, r.gone, r.failed.length, r.skipped], [2, 0, 0, 0, 2]);
        assert.deepEqual(
          r.stops.map((s) => s.code),
          ["ECANCELED"],
        );
        return true;
      },
    );
  });
});
