import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Errno } from "../../src/sys/index.js";
import type { Holder } from "../kit/holder.js";
import type { HeldSocket } from "../kit/holder-protocol.js";
import type { ScratchNetns } from "../kit/netns.js";
import { describeAsRoot } from "../kit/root.js";
import { ss, ssKill } from "../kit/ss.js";
import { startUdpScene, type UdpScene } from "../kit/udp-scene.js";

describeAsRoot("test kit: holder probes after a destroy (ss -K)", () => {
  let scene: UdpScene;
  let holder: Holder;
  let ns: ScratchNetns;
  let receiver: HeldSocket;
  let clients: UdpScene["clients"];

  before(async () => {
    scene = await startUdpScene("probe");
    ({ holder, ns, receiver, clients } = scene);
  });

  after(async () => {
    await scene?.stop();
  });

  const kill = (s: HeldSocket) => ssKill(["-u", "sport", "=", `:${s.sport}`], { netns: ns.name });

  test("poll and send tell a destroyed socket from a live one", async () => {
    const [a, b] = (await clients(2)) as [HeldSocket, HeldSocket];
    assert.deepEqual(await holder.poll([a, b]), [Errno.EAGAIN, Errno.EAGAIN]);
    const killed = await kill(a);
    assert.deepEqual(
      killed.map((r) => r.cookie),
      [a.cookie],
    );
    await holder.waitFor([a], "ECONNABORTED", 5000);
    assert.deepEqual(await holder.poll([b]), [Errno.EAGAIN]);
    assert.deepEqual(await holder.send([a, b]), [Errno.EDESTADDRREQ, 0]);
    await holder.close([a, b]);
  });

  test("the kernel reports the error once, and waitFor still counts one a poll consumed", async () => {
    const [c] = (await clients(1)) as [HeldSocket];
    await kill(c);
    assert.deepEqual(await holder.poll([c]), [Errno.ECONNABORTED]);
    assert.deepEqual(await holder.poll([c]), [Errno.EAGAIN]);
    await holder.waitFor([c], "ECONNABORTED", 1000);
    await holder.close([c]);
  });

  test("waitFor rejects after its deadline, naming the sockets that did not report", async () => {
    const [d, e] = (await clients(2)) as [HeldSocket, HeldSocket];
    await kill(d);
    await assert.rejects(holder.waitFor([d, e], "ECONNABORTED", 50), (err: Error) =>
      err.message.includes(`1 of 2 sockets did not report it within 50 ms: ${e.id} (EAGAIN)`),
    );
    await assert.rejects(holder.waitFor([e], "ENOTANERRNO", 50), /unknown errno name/);
    await holder.close([d, e]);
  });

  test("19,000 UDP sockets open in one request, each with its own cookie and inode", async () => {
    const many = await clients(19_000);
    assert.equal(many.length, 19_000);
    assert.equal(new Set(many.map((s) => s.cookie)).size, 19_000);
    assert.equal(new Set(many.map((s) => s.inode)).size, 19_000);
    const rows = await ss(["-u", "state", "established", "dport", "=", `:${receiver.sport}`], {
      netns: ns.name,
    });
    assert.equal(rows.length, 19_000);
    const cookies = new Set(many.map((s) => s.cookie));
    assert.ok(rows.every((r) => r.cookie !== undefined && cookies.has(r.cookie)));
    assert.deepEqual(
      (await holder.poll(many)).filter((e) => e !== Errno.EAGAIN),
      [],
    );
    await holder.close(many);
    assert.deepEqual(await ss(["-u", "state", "established"], { netns: ns.name }), []);
  });
});
