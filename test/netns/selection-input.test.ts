/**
 * One input, one answer: a NUL byte in a namespace's name or path or in netnsDirs, or a forged
 * handle (Object.create(NetNS.prototype)), is a QueryError naming the field; a closed handle is a
 * MisuseError — thrown by every entry point (sync, sockdiag/promises, the pool's terminateMany)
 * before any namespace is visited, the sockets of a real namespace counted before and after. A
 * well-formed namespace that cannot be opened stays a failure in the report, the rest visited.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { fromName, type NamespaceSelection, NetNS } from "../../src/netns/index.js";
import { QueryError } from "../../src/options/index.js";
import * as promises from "../../src/promises/index.js";
import { destroySocket, destroySockets, iterateSockets, listSockets } from "../../src/sockets/index.js";
import { MisuseError } from "../../src/sys/errors.js";
import { BackendTerminator, terminateUDPConnectionsToBackend } from "../../src/terminator/index.js";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";

type Selection = Pick<NamespaceSelection, "netns" | "netnsDirs">;
type Check = (err: unknown) => boolean;

const refusal =
  (field: string): Check =>
  (err) => {
    assert.ok(err instanceof QueryError, `expected QueryError, got ${String(err)}`);
    assert.equal(err.field, field);
    return true;
  };
const misuse: Check = (err) => {
  assert.ok(err instanceof MisuseError, `expected MisuseError, got ${String(err)}`);
  assert.match(err.message, /closed/);
  return true;
};

describeAsRoot("a malformed namespace selection", () => {
  let scene: UdpScene;
  let clients: HeldSocket[];
  before(async () => {
    scene = await startUdpScene("selinput");
    clients = await scene.clients(2);
  });
  after(async () => {
    await scene?.stop();
  });

  const filter = () => `dst 127.0.0.1:${scene.receiver.sport}`;

  /** Both clients listed and alive. */
  async function intact(): Promise<void> {
    assert.equal(listSockets({ netns: scene.ns.name, protocols: ["udp"], filter: filter() }).length, 2);
    const errnos = await scene.holder.poll(clients);
    assert.ok(
      errnos.every((e) => e === 0 || e === 11),
      `a client was destroyed: ${errnos}`,
    );
  }

  /** The cases: a selection, and how it is refused. */
  function cases(): [string, () => Selection, Check][] {
    return [
      ["a NUL byte in a name", () => ({ netns: `${scene.ns.name}\0x` }), refusal("netns")],
      ["a NUL byte in a path", () => ({ netns: `${scene.ns.path}\0` }), refusal("netns")],
      [
        "a NUL byte in netnsDirs",
        () => ({ netns: "all", netnsDirs: ["/run/netns\0/x"] }),
        refusal("netnsDirs"),
      ],
      ["a forged handle", () => ({ netns: Object.create(NetNS.prototype) as NetNS }), refusal("netns")],
      [
        "a closed handle",
        () => {
          const ns = fromName(scene.ns.name);
          ns.close();
          return { netns: ns };
        },
        misuse,
      ],
    ];
  }

  test("the sync entry points throw before visiting anything", async () => {
    await intact();
    for (const [what, selection, check] of cases()) {
      const s = () => ({ ...selection(), protocols: ["udp" as const], filter: filter() });
      assert.throws(() => listSockets(s()), check, `listSockets: ${what}`);
      assert.throws(() => iterateSockets(s()), check, `iterateSockets: ${what}`);
      assert.throws(() => destroySockets(s()), check, `destroySockets: ${what}`);
      assert.throws(() => listConntrack(selection()), check, `listConntrack: ${what}`);
      assert.throws(() => deleteConntrack({ ...selection(), all: true }), check, `deleteConntrack: ${what}`);
      let visited = 0;
      const config = { ...selection(), conntrack: false, onNamespace: () => visited++ };
      assert.throws(() => new BackendTerminator(config), check, `BackendTerminator: ${what}`);
      assert.throws(
        () => terminateUDPConnectionsToBackend(`127.0.0.1:${scene.receiver.sport}`, config),
        check,
        `terminateUDPConnectionsToBackend: ${what}`,
      );
      assert.equal(visited, 0);
    }
    await intact();
  });

  test("a handle closed after the terminator was made: terminate throws MisuseError, nothing visited", async () => {
    const ns = fromName(scene.ns.name);
    let visited = 0;
    const terminator = new BackendTerminator({ netns: ns, conntrack: false, onNamespace: () => visited++ });
    ns.close();
    assert.throws(() => terminator.terminate({ address: "127.0.0.1", port: scene.receiver.sport }), misuse);
    assert.equal(visited, 0);
    await intact();
    const handle = fromName(scene.ns.name);
    handle.close();
    const [listed] = listSockets({ netns: scene.ns.name, protocols: ["udp"], filter: filter() });
    assert.throws(() => destroySocket(listed!, { netns: handle }), misuse);
    assert.throws(
      () => destroySocket(listed!, Object.create(NetNS.prototype) as NetNS),
      refusal("options.netns"),
    );
    await intact();
  });

  test("sockdiag/promises and the pool reject before posting anything", async () => {
    for (const [what, selection, check] of cases()) {
      const s = () => ({ ...selection(), protocols: ["udp" as const], filter: filter() });
      await assert.rejects(promises.listSockets(s()), check, `listSockets: ${what}`);
      await assert.rejects(promises.destroySockets(s()), check, `destroySockets: ${what}`);
      await assert.rejects(
        promises.deleteConntrack({ ...selection(), all: true }),
        check,
        `deleteConntrack: ${what}`,
      );
      await assert.rejects(promises.listConntrack(selection()), check, `listConntrack: ${what}`);
      await assert.rejects(
        (async () => {
          for await (const _ of promises.iterateSockets(s())) break;
        })(),
        check,
        `iterateSockets: ${what}`,
      );
      assert.throws(() => new promises.BackendTerminator(selection()), check, `BackendTerminator: ${what}`);
    }
    // The pool's terminateMany: a configuration changed since it was given.
    let visited = 0;
    const config = {
      netns: "all" as const,
      netnsDirs: ["/nonexistent-sdt"],
      discover: false,
      onNamespace: () => visited++,
    };
    const shared = new promises.BackendTerminator(config);
    config.netnsDirs.push("/run/netns\0");
    await assert.rejects(
      shared.terminateMany([{ address: "127.0.0.1", port: scene.receiver.sport }]),
      refusal("netnsDirs"),
    );
    assert.equal(visited, 0);
    await intact();
  });

  test("a well-formed namespace that cannot be opened is still a failure in the report, the rest visited", () => {
    const report = new BackendTerminator({
      netns: "all",
      netnsDirs: ["/nonexistent-sdt-dir"],
      discover: false,
      conntrack: false,
      dryRun: true,
    }).terminate({ address: "127.0.0.1", port: scene.receiver.sport });
    assert.deepEqual(
      report.namespaces.map((n) => n.netns),
      ["(host)"],
    );
    const single = new BackendTerminator({ netns: "sdt-no-such-namespace", conntrack: false }).terminate({
      address: "127.0.0.1",
      port: scene.receiver.sport,
    });
    assert.equal(single.ok, false);
    assert.equal(single.failures.length, 1);
  });
});
