/**
 * A predicate answers true or false: any other answer — a Promise (an async predicate given to the
 * synchronous API), "false", 1n, an object — is handled as a predicate that threw (PredicateError
 * with a balanced report), and the socket it was asked about is kept. Against real sockets, in
 * destroySockets and in BackendTerminator.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { QueryError } from "../../src/options/index.js";
import { PredicateError } from "../../src/run/index.js";
import { destroySockets, listSockets, type NamespacedDestroyReport } from "../../src/sockets/index.js";
import { BackendTerminator } from "../../src/terminator/index.js";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";

const ANSWERS: [string, () => unknown][] = [
  ["an async function's Promise", async () => false],
  // biome-ignore lint/suspicious/noThenProperty: a thenable is the case under test.
  ["a thenable", () => ({ then: () => {} })],
  ['"false"', () => "false"],
  ["1n", () => 1n],
  ["an object", () => ({})],
  ["undefined", () => undefined],
  ["1", () => 1],
];

describeAsRoot("a predicate's answer that is not a boolean", () => {
  let scene: UdpScene;
  let clients: HeldSocket[];

  before(async () => {
    scene = await startUdpScene("predans");
    clients = await scene.clients(2);
  });
  after(async () => {
    await scene?.stop();
  });

  /** How many of the two clients the kernel still lists, and whether a recv on each says alive. */
  async function alive(): Promise<number> {
    const listed = listSockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `dst 127.0.0.1:${scene.receiver.sport}`,
    }).length;
    const errnos = await scene.holder.poll(clients);
    assert.ok(
      errnos.every((e) => e === 0 || e === 11),
      `a client was destroyed: ${errnos}`,
    );
    return listed;
  }

  for (const [what, predicate] of ANSWERS) {
    test(`destroySockets: ${what} is a PredicateError, balanced, both clients kept`, async () => {
      assert.equal(await alive(), 2);
      assert.throws(
        () =>
          destroySockets({
            netns: scene.ns.name,
            protocols: ["udp"],
            filter: `dst 127.0.0.1:${scene.receiver.sport}`,
            predicate: predicate as () => boolean,
          }),
        (err: unknown) => {
          assert.ok(err instanceof PredicateError, String(err));
          assert.ok(err.cause instanceof QueryError, String(err.cause));
          assert.equal(err.cause.field, "predicate");
          assert.match(err.message, /the destroy predicate answered .*, not true or false/);
          const r: NamespacedDestroyReport = err.report;
          assert.equal(r.matched, r.destroyed + r.gone + r.failed.length + r.skipped);
          assert.equal(r.destroyed, 0);
          return true;
        },
      );
      assert.equal(await alive(), 2);
    });
  }

  test("BackendTerminator with predicate: async () => false keeps both real clients", async () => {
    assert.equal(await alive(), 2);
    const report = new BackendTerminator({
      netns: scene.ns.name,
      conntrack: false,
      predicate: (async () => false) as unknown as () => boolean,
    }).terminate({ address: "127.0.0.1", port: scene.receiver.sport });
    const [ns] = report.namespaces;
    assert.ok(ns?.error instanceof PredicateError, String(ns?.error));
    assert.equal(report.total.destroyed, 0);
    const t = report.total;
    assert.equal(t.matched, t.destroyed + t.gone + t.failed.length + t.skipped);
    assert.equal(report.ok, false);
    assert.equal(await alive(), 2);
  });

  test("a predicate answering true still destroys (the rule refuses only what is not a boolean)", async () => {
    const report = destroySockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `dst 127.0.0.1:${scene.receiver.sport}`,
      predicate: () => true,
    });
    assert.equal(report.destroyed, 2);
    await scene.holder.waitFor(clients, "ECONNABORTED");
  });
});
