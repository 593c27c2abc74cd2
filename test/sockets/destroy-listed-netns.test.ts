/**
 * destroySocket acts only in the namespace a socket was listed in: its `netns` is a reference by
 * identity (plain data), reopened only while it still names that namespace — never a descriptor
 * path that a later handle may reuse. A handle naming another namespace is refused, nothing sent.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { destroySocket, errors, type InetSocketFields, listSockets, netnsFromName } from "sockdiag";

const { NetnsNotFoundError, QueryError } = errors;

import { Errno } from "../../src/sys/index.js";
import {
  createNetns,
  describeAsRoot,
  type ScratchNetns,
  startUdpScene,
  type UdpScene,
} from "../kit/index.js";

describeAsRoot("destroySocket in the namespace the socket was listed in", () => {
  let scene: UdpScene;
  let other: ScratchNetns;

  before(async () => {
    scene = await startUdpScene("listed-netns");
    other = await createNetns("listed-other");
  });

  after(async () => {
    await scene?.stop();
    await other?.remove();
  });

  const listedThrough = (handle: ReturnType<typeof netnsFromName>, sport: number) => {
    const [s] = listSockets({ netns: handle, protocols: ["udp"], filter: `sport = :${sport}` });
    assert.ok(s, "listed");
    return s;
  };

  test("listed through a handle that was closed since: destroyed there, whatever its descriptor became", async () => {
    const [client] = await scene.clients(1);
    const handle = netnsFromName(scene.ns.name);
    const s = listedThrough(handle, client!.sport);
    handle.close();
    // The freed descriptor number is likely taken by this handle of another namespace.
    using elsewhere = netnsFromName(other.name);
    assert.equal(s.netns?.ino, listedThrough(netnsFromName(scene.ns.name), client!.sport).netns?.ino);
    assert.notEqual(elsewhere.ino, s.netns?.ino);
    assert.equal(destroySocket(s), "destroyed");
    await scene.holder.waitFor([client!], "ECONNABORTED");
  });

  test("a plain copy (structuredClone) is destroyed as the socket it copies", async () => {
    const [client] = await scene.clients(1);
    using handle = netnsFromName(scene.ns.name);
    const copy = structuredClone(listedThrough(handle, client!.sport));
    assert.equal(destroySocket(copy), "destroyed");
    await scene.holder.waitFor([client!], "ECONNABORTED");
  });

  test("a handle of another namespace is refused, and nothing is destroyed", async () => {
    const [client] = await scene.clients(1);
    using handle = netnsFromName(scene.ns.name);
    const s = listedThrough(handle, client!.sport);
    using elsewhere = netnsFromName(other.name);
    assert.throws(() => destroySocket(s, { netns: elsewhere }), QueryError);
    assert.deepEqual(await scene.holder.poll([client!]), [Errno.EAGAIN]);
    assert.equal(destroySocket(s, { netns: handle }), "destroyed");
  });

  test("a namespace that is gone cannot be reopened: NetnsNotFoundError, not another namespace", async () => {
    const doomed = await createNetns("listed-doomed");
    let s: InetSocketFields | undefined;
    try {
      using handle = netnsFromName(doomed.name);
      // No socket needed: a socket listed there would carry this reference.
      s = { ...listedThrough(netnsFromName(scene.ns.name), scene.receiver.sport), netns: handle.ref };
    } finally {
      await doomed.remove();
    }
    assert.throws(() => destroySocket(s!), NetnsNotFoundError);
  });
});
