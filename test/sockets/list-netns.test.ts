import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { after, before, test } from "node:test";
import { iterateSockets, listSockets, UnsupportedProtocolError } from "../../src/sockets/index.js";
import { cleanupLeftovers, describeAsRoot, Holder } from "../kit/index.js";
import { kernelLacks, keyOf, type ListScene, startScene } from "./list-scene.js";

/** The inode of the calling thread's network namespace. */
function threadNetnsIno(): number {
  return statSync("/proc/thread-self/ns/net").ino;
}

describeAsRoot("listing other namespaces leaves the caller's namespace unchanged", () => {
  let scene: ListScene;
  let home: number;

  before(async () => {
    await cleanupLeftovers();
    scene = await startScene({ label: "home", mptcp: false });
    home = threadNetnsIno();
    assert.notEqual(home, statSync(scene.ns.path).ino);
  });
  after(async () => {
    await scene?.stop();
  });

  test("after listing a namespace by name, by path and all of them", () => {
    assert.ok(listSockets({ netns: scene.ns.name, protocols: ["udp", "unix"] }).length > 0);
    assert.equal(threadNetnsIno(), home);
    assert.ok(listSockets({ netns: scene.ns.path, protocols: ["tcp"] }).length > 0);
    assert.equal(threadNetnsIno(), home);
    const all = iterateSockets({ netns: "all", protocols: ["udp"], states: ["all"] });
    const labels = new Set([...all].map((s) => s.netns?.label));
    assert.ok(labels.has(scene.ns.name), `labels: ${[...labels].join(", ")}`);
    assert.equal(threadNetnsIno(), home);
  });

  test("sockets opened by this process afterwards are created in its own namespace", async () => {
    listSockets({ netns: scene.ns.name, protocols: ["udp"] });
    await using local = await Holder.start();
    assert.equal(local.netnsInode, home);
    const [s] = await local.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    assert.ok(s);
    const mine = listSockets({ protocols: ["udp"], filter: `src 127.0.0.1:${s.sport}` });
    assert.deepEqual(mine.map(keyOf), [keyOf(s)]);
    assert.equal(mine[0]?.netns, undefined);
  });

  test("after a namespace that does not exist or is not a network namespace", () => {
    assert.throws(() => listSockets({ netns: "sdt-no-such-namespace" }), { name: "NetnsNotFoundError" });
    assert.equal(threadNetnsIno(), home);
    assert.throws(() => listSockets({ netns: "/proc/self/ns/mnt" }), { name: "NotANetnsError" });
    assert.equal(threadNetnsIno(), home);
    assert.throws(() => listSockets({ netns: "/etc/hostname" }), { name: "NotANetnsError" });
    assert.equal(threadNetnsIno(), home);
  });

  test("after an error thrown inside the namespace (a device it does not have)", () => {
    assert.throws(
      () => listSockets({ netns: scene.ns.name, filter: "dev sdt-no-such-dev" }),
      (err: Error) => err.name === "FilterResolveError" && err.message.includes("sdt-no-such-dev"),
    );
    assert.equal(threadNetnsIno(), home);
  });

  test("after a protocol the kernel cannot list, asked in another namespace", (t) => {
    if (!kernelLacks("sctp")) {
      t.skip("this kernel lists SCTP sockets");
      return;
    }
    assert.throws(
      () => listSockets({ netns: scene.ns.name, protocols: ["udp", "sctp"] }),
      (err: unknown) =>
        err instanceof UnsupportedProtocolError &&
        err.protocol === "sctp" &&
        /not supported by this kernel/.test(err.message),
    );
    assert.equal(threadNetnsIno(), home);
  });

  test("after breaking out of, or throwing in, the loop over another namespace's sockets", () => {
    const query = { netns: scene.ns.name, protocols: ["udp", "unix"] as const, states: ["all"] };
    let seen = 0;
    for (const _ of iterateSockets(query)) {
      seen++;
      break;
    }
    assert.equal(seen, 1);
    assert.equal(threadNetnsIno(), home);
    assert.throws(() => {
      for (const _ of iterateSockets(query)) throw new Error("consumer failed");
    }, /consumer failed/);
    assert.equal(threadNetnsIno(), home);
    // A half-read iteration left open, then dropped: the next listing still works from home.
    const it = iterateSockets(query)[Symbol.iterator]();
    assert.equal(it.next().done, false);
    assert.equal(threadNetnsIno(), home);
    it.return?.(undefined);
    assert.ok(listSockets(query).length > 0);
    assert.equal(threadNetnsIno(), home);
  });

  test("a filter's device names are resolved inside the namespace listed", async () => {
    await scene.ns.ip("link", "add", "sdtbr0", "type", "bridge");
    try {
      assert.deepEqual(listSockets({ netns: scene.ns.name, filter: "dev sdtbr0" }), []);
      assert.equal(threadNetnsIno(), home);
      // The caller's namespace has no such device: the same filter is refused here.
      assert.throws(() => listSockets({ filter: "dev sdtbr0" }), { name: "FilterResolveError" });
    } finally {
      await scene.ns.ip("link", "del", "sdtbr0");
    }
  });
});
