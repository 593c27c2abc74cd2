/**
 * destroySocket takes a cookie only as the kernel gives one: a bigint from 0 to 2^64-2. -1n (cut to
 * 64 bits, INET_DIAG_NOCOOKIE) would tell the kernel to skip its cookie check and hit whichever
 * socket now holds the 4-tuple; 2^64 would be cut to 0. Against the kernel: socket A closed, B
 * bound to A's very address and port and connected to the same peer; every such cookie is a
 * QueryError naming the field, and B lives.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { QueryError } from "../../src/options/index.js";
import * as promises from "../../src/promises/index.js";
import { destroySocket, destroySockets, listSockets } from "../../src/sockets/index.js";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";

describeAsRoot("destroySocket's cookie", () => {
  let scene: UdpScene;
  before(async () => {
    scene = await startUdpScene("cookie");
  });
  after(async () => {
    await scene?.stop();
  });

  const listOne = (client: HeldSocket) => {
    const found = listSockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `sport = :${client.sport} and dst 127.0.0.1:${scene.receiver.sport}`,
    });
    assert.equal(found.length, 1);
    return found[0]!;
  };

  test("a cookie the kernel never gives is refused; the socket now on the 4-tuple lives", async () => {
    const [a] = await scene.clients(1);
    const listedA = listOne(a!);
    await scene.holder.close([a!]);
    const [b] = await scene.holder.open({
      kind: "udp",
      bind: { address: "127.0.0.1", port: a!.sport },
      connect: { address: "127.0.0.1", port: scene.receiver.sport },
    });
    const listedB = listOne(b!);
    assert.notEqual(listedB.cookie, listedA.cookie, "B is another socket on A's 4-tuple");

    const copy = { ...listedA };
    for (const cookie of [-1n, 2n ** 64n - 1n, 2n ** 64n, -2n, 5 as unknown as bigint]) {
      const refused = (err: unknown) => {
        assert.ok(err instanceof QueryError, String(err));
        assert.equal(err.field, "cookie");
        return true;
      };
      assert.throws(() => destroySocket({ ...copy, cookie }), refused, `sync, cookie ${cookie}`);
      await assert.rejects(
        promises.destroySocket({ ...copy, cookie }),
        refused,
        `promises, cookie ${cookie}`,
      );
      // A listed socket whose cookie was changed afterwards is refused as well.
      const tampered = listOne(b!);
      (tampered as { cookie: bigint }).cookie = cookie;
      assert.throws(() => destroySocket(tampered), refused, `listed, cookie ${cookie}`);
    }
    assert.deepEqual(await scene.holder.poll([b!]), [11], "B lives");
    assert.equal(listOne(b!).cookie, listedB.cookie);

    // A's own cookie is checked by the kernel: A is gone, B untouched.
    assert.equal(destroySocket(copy), "gone");
    assert.deepEqual(await scene.holder.poll([b!]), [11], "B lives");

    // A predicate that sets the cookie to -1n: the socket fails, nothing is sent for it.
    const report = destroySockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      filter: `sport = :${b!.sport} and dst 127.0.0.1:${scene.receiver.sport}`,
      predicate: (s) => {
        (s as { cookie: bigint }).cookie = -1n;
        return true;
      },
    });
    assert.deepEqual([report.matched, report.destroyed, report.failed.length], [1, 0, 1]);
    assert.match(report.failed[0]!.message, /cookie/);
    assert.deepEqual(await scene.holder.poll([b!]), [11], "B lives");
    assert.equal(destroySocket(listOne(b!)), "destroyed");
    await scene.holder.waitFor([b!], "ECONNABORTED");
  });
});
