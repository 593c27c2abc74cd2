/**
 * sockdiag/promises against the sync API on one scene, in a throwaway namespace: the same sockets,
 * the same reports, the same errors (class and code), and the caller's callbacks called.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as sync from "sockdiag";
import * as promises from "sockdiag/promises";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";

describeAsRoot("sockdiag/promises gives what the sync API gives", () => {
  let scene: UdpScene;
  let kept: HeldSocket[];

  before(async () => {
    scene = await startUdpScene("promises-same");
    kept = await scene.clients(20);
  });

  after(async () => {
    await scene?.stop();
  });

  test("listSockets and iterateSockets: the same sockets, as the same objects", async () => {
    const query = { netns: scene.ns.name, protocols: ["udp", "tcp"] as const };
    const expected = sync.listSockets(query);
    assert.ok(expected.length >= kept.length + 1);
    const listed = await promises.listSockets(query);
    assert.deepStrictEqual(listed, expected);
    assert.ok(listed.every((s) => s instanceof sync.InetSocket));
    const iterated: sync.Socket[] = [];
    for await (const s of promises.iterateSockets(query)) iterated.push(s);
    assert.deepStrictEqual(iterated, expected);
  });

  test("the same sockets whether the worker forwards the kernel's bytes or decodes them first", async () => {
    // Forwarded undecoded: no filter, no extensions. Decoded in the worker: a filter (its user-space
    // check needs the socket), extensions (attributes). Unix sockets ride in the same chunks.
    const [listener] = await scene.holder.open({ kind: "listener", bind: { address: "::1" } });
    await scene.holder.open({ kind: "connection", listener: listener!.id, family: "inet6" });
    await scene.holder.open({
      kind: "unix",
      type: "stream",
      name: `\0sdt-${process.pid}-wire`,
      listen: true,
    });
    const all: sync.NamespacedQuery = {
      netns: scene.ns.name,
      protocols: ["udp", "tcp", "unix"],
      states: ["all"],
    };
    const inet = { ...all, protocols: ["tcp", "udp"] } satisfies sync.NamespacedQuery;
    const queries: sync.NamespacedQuery[] = [
      all,
      { ...inet, filter: `sport = :${listener!.sport} or dport = :${scene.receiver.sport}` },
      // Attributes that stay put between two dumps: not tcp_info's timers nor memory counters.
      { ...inet, extensions: ["cong", "tos", "tclass"] },
    ];
    for (const query of queries) {
      const expected = sync.listSockets(query);
      assert.ok(expected.some((s) => s.protocol === "tcp") && expected.some((s) => s.protocol === "udp"));
      if (query.extensions) assert.ok(expected.some((s) => s.family !== "unix" && s.cong !== undefined));
      assert.deepStrictEqual(await promises.listSockets(query), expected, JSON.stringify(query));
    }
    assert.ok(sync.listSockets(all).some((s) => s.protocol === "unix"));
  });

  test("a sync and a promises dry run give the same report; a destroy through promises works", async () => {
    const query = {
      netns: scene.ns.name,
      protocols: ["udp"] as const,
      states: ["established"],
      filter: `dport = :${scene.receiver.sport}`,
    };
    const dry = await promises.destroySockets({ ...query, dryRun: true });
    assert.deepStrictEqual(dry, sync.destroySockets({ ...query, dryRun: true }));
    assert.equal(dry.destroyed, 0);
    assert.equal(dry.matched, dry.wouldDestroy + dry.gone + dry.failed.length + dry.skipped, "it balances");
    const victims = await scene.clients(3);
    const seen: number[] = [];
    const report = await promises.destroySockets({
      ...query,
      // Runs on this thread, may be async: keep the first 20 clients.
      predicate: async (s) => !kept.some((k) => k.inode === s.inode),
      onOutcome: (s, outcome) => {
        if (outcome === "destroyed") seen.push(s.inode);
      },
    });
    assert.equal(report.matched, 3);
    assert.equal(report.destroyed, 3);
    assert.deepEqual(seen.sort(), victims.map((v) => v.inode).sort());
    await scene.holder.waitFor(victims, "ECONNABORTED");
    assert.equal((await promises.listSockets(query)).length, kept.length);
  });

  test("destroySocket and BackendTerminator through promises, as in sync", async () => {
    const [one] = await scene.clients(1);
    const listed = (await promises.listSockets({ netns: scene.ns.name, protocols: ["udp"] })).find(
      (s) => s.inode === one!.inode,
    );
    assert.ok(listed);
    assert.equal(await promises.destroySocket(listed), "destroyed");
    assert.equal(await promises.destroySocket(listed), "gone");

    const backend = { address: "127.0.0.1", port: scene.receiver.sport };
    const config = { dryRun: true, netnsDirs: ["/run/netns"], discover: false };
    const mine = (r: sync.TerminationReport) => r.namespaces.find((n) => n.netns === scene.ns.name);
    const viaPromises = await new promises.BackendTerminator(config).terminate(backend);
    const viaSync = new sync.BackendTerminator(config).terminate(backend);
    assert.deepStrictEqual(mine(viaPromises), mine(viaSync));
    assert.equal(mine(viaPromises)?.report?.matched, kept.length);
  });

  test("errors arrive as the sync API throws them: class, code, fields", async () => {
    const bad = { protocols: ["nope"] as unknown as ["udp"] };
    const syncError = (() => {
      try {
        sync.listSockets(bad);
      } catch (err) {
        return err as sync.errors.QueryError;
      }
    })();
    await assert.rejects(promises.listSockets(bad), (err: unknown) => {
      assert.ok(err instanceof sync.errors.QueryError);
      assert.ok(err instanceof sync.errors.SockdiagError);
      assert.equal(err.code, "ERR_SOCKDIAG_QUERY");
      assert.equal(err.message, syncError?.message);
      assert.equal(err.field, "protocols");
      return true;
    });
    await assert.rejects(promises.listSockets({ netns: "sdt-no-such-namespace" }), (err: unknown) => {
      assert.ok(err instanceof sync.errors.NetnsNotFoundError);
      assert.equal(err.code, "ERR_SOCKDIAG_NETNS_NOT_FOUND");
      return true;
    });
  });
});
