/**
 * watchSockets against the real kernel: sockets a helper process closes appear in the stream with
 * their addresses, ports and cookies, and a filter keeps the others out — checked in kernel order
 * (one subscription's messages arrive in the order the kernel freed the sockets).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { InetSocket } from "sockdiag";
import { type SocketWatchStream, watchSockets } from "sockdiag/promises";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";

/** Read `watch` until `until` says stop; returns everything read. */
async function readUntil(
  iterator: AsyncIterator<InetSocket>,
  until: (seen: InetSocket[]) => boolean,
): Promise<InetSocket[]> {
  const seen: InetSocket[] = [];
  while (!until(seen)) {
    const next = await iterator.next();
    assert.ok(!next.done, "the watch ended early");
    seen.push(next.value);
  }
  return seen;
}

const cookies = (held: readonly HeldSocket[]) => new Set(held.map((h) => h.cookie));
const hasAll = (want: Set<string>) => (seen: InetSocket[]) => {
  const got = new Set(seen.map((s) => s.cookie.toString()));
  return [...want].every((c) => got.has(c));
};

describeAsRoot("watchSockets", () => {
  let scene: UdpScene;
  const watches: SocketWatchStream[] = [];

  before(async () => {
    scene = await startUdpScene("watch");
  });

  after(async () => {
    for (const w of watches) w.close();
    await scene?.stop();
  });

  test("closed sockets appear with their addresses, ports and cookies; the filter keeps others out", async () => {
    const port = scene.receiver.sport;
    const filtered = watchSockets({ netns: scene.ns.name, protocols: ["udp"], filter: `dport = :${port}` });
    const everything = watchSockets({ netns: scene.ns.name, protocols: ["udp"] });
    watches.push(filtered, everything);
    await Promise.all([filtered.ready, everything.ready]);

    const targets = await scene.clients(5);
    const sentinel = await scene.clients(1);
    const others = await scene.holder.open(
      { kind: "udp", connect: { address: "127.0.0.1", port: port + 1 } },
      3,
    );
    await scene.holder.close([...others, ...targets]);
    const all = everything[Symbol.asyncIterator]();
    await readUntil(all, hasAll(cookies([...others, ...targets])));
    // Freed after everything above: once the filtered watch shows it, it has shown all before it.
    await scene.holder.close(sentinel);
    const seen = await readUntil(filtered[Symbol.asyncIterator](), hasAll(cookies(sentinel)));

    assert.deepEqual(new Set(seen.map((s) => s.cookie.toString())), cookies([...targets, ...sentinel]));
    for (const s of seen) {
      const held = [...targets, ...sentinel].find((h) => h.cookie === s.cookie.toString())!;
      assert.equal(s.protocol, "udp");
      assert.equal(s.netns?.label, scene.ns.name);
      assert.deepEqual([s.src, s.sport, s.dst, s.dport], [held.src, held.sport, held.dst, held.dport]);
    }
  });

  test("breaking out of the loop ends the watch; an aborted signal rejects", async () => {
    const controller = new AbortController();
    const watch = watchSockets({ netns: scene.ns.name, protocols: ["udp"], signal: controller.signal });
    watches.push(watch);
    await watch.ready;
    const [one] = await scene.clients(1);
    await scene.holder.close([one!]);
    for await (const s of watch) {
      if (s.cookie.toString() === one!.cookie) break;
    }
    const aborted = watchSockets({ netns: scene.ns.name, signal: controller.signal });
    watches.push(aborted);
    controller.abort();
    await assert.rejects(
      (async () => {
        for await (const _ of aborted);
      })(),
      { name: "AbortError", code: "ABORT_ERR" },
    );
  });
});
