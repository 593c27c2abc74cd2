/**
 * Sockets that share one 4-tuple: SO_REUSEPORT groups (IPv4, IPv6) and dual-stack groups (IPv4
 * sockets beside IPv6 sockets connected through ::ffff:a.b.c.d). The kernel's destroy finds one
 * socket of such a group per lookup and answers ENOENT for the others; sockdiag must destroy every
 * one of them, and count `gone` only for sockets a fresh listing no longer has.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fromName, type NetNS } from "../../src/netns/index.js";
import { SHADOWED_MESSAGE } from "../../src/sockets/destroyer.js";
import { DestroyError, destroySocket, destroySockets, listSockets } from "../../src/sockets/index.js";
import { Errno } from "../../src/sys/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  type ScratchNetns,
} from "../kit/index.js";

describeAsRoot("destroying sockets that share a 4-tuple", () => {
  let ns: ScratchNetns;
  let handle: NetNS;
  let holder: Holder;
  let rx4: HeldSocket;
  let rx6: HeldSocket;
  /** Below the ephemeral range, where the kernel put the receivers. */
  let nextPort = 21000;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("reuseport");
    handle = fromName(ns.name);
    holder = await Holder.start({ netnsPath: ns.path });
    [rx4] = (await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } })) as [HeldSocket];
    [rx6] = (await holder.open({ kind: "udp", bind: { address: "::1" } })) as [HeldSocket];
  });
  after(async () => {
    await holder?.stop();
    handle?.close();
    await ns?.remove();
  });

  /** `n` sockets of `family` sharing one local address and port, connected to `to`. */
  const group = (family: "inet" | "inet6", local: string, port: number, to: HeldSocket, n: number) =>
    holder.open(
      {
        kind: "udp",
        family,
        reusePort: true,
        bind: { address: local, port },
        connect: { address: to.src, port: to.sport },
      },
      n,
    );
  const alive = async (sockets: readonly HeldSocket[]) =>
    assert.deepEqual(
      await holder.poll(sockets),
      sockets.map(() => Errno.EAGAIN),
    );

  test("IPv4, v4-mapped and dual-stack groups connected to one backend are destroyed whole", async () => {
    const p4 = nextPort++;
    const pm = nextPort++;
    const pd = nextPort++;
    const ipv4 = await group("inet", "127.0.0.1", p4, rx4, 3);
    const mapped = await group("inet6", "127.0.0.1", pm, rx4, 3);
    const dual = [
      ...(await group("inet", "127.0.0.1", pd, rx4, 2)),
      ...(await group("inet6", "127.0.0.1", pd, rx4, 2)),
    ];
    // Bystanders: unconnected members of the IPv4 group, and a client of another backend.
    const unconnected = await holder.open(
      { kind: "udp", reusePort: true, bind: { address: "127.0.0.1", port: p4 } },
      2,
    );
    const other = await group("inet", "127.0.0.1", nextPort++, rx4, 1);
    const otherBackend = await holder.open({ kind: "udp", connect: { address: "::1", port: rx6.sport } });

    const report = destroySockets({
      netns: handle,
      protocols: ["udp"],
      states: ["established"],
      filter: { dst: "127.0.0.1", dport: rx4.sport, sport: { ge: p4, le: pd } },
    });
    const targets = [...ipv4, ...mapped, ...dual];
    assert.deepEqual(
      [report.matched, report.destroyed, report.gone, report.failed, report.skipped],
      [targets.length, targets.length, 0, [], 0],
    );
    await holder.waitFor(targets, "ECONNABORTED");
    await alive([...unconnected, ...other, ...otherBackend]);
    const left = listSockets({
      netns: handle,
      protocols: ["udp"],
      filter: { dst: "127.0.0.1", dport: rx4.sport },
    });
    assert.deepEqual(
      left.map((s) => s.cookie.toString()),
      other.map((s) => s.cookie),
    );
  });

  test("an IPv6 group connected to [::1]:PORT is destroyed whole", async () => {
    const sockets = await group("inet6", "::1", nextPort++, rx6, 3);
    const report = destroySockets({
      netns: handle,
      protocols: ["udp"],
      filter: { dst: "::1", dport: rx6.sport, sport: sockets[0]!.sport },
    });
    assert.deepEqual([report.matched, report.destroyed, report.gone, report.failed], [3, 3, 0, []]);
    await holder.waitFor(sockets, "ECONNABORTED");
  });

  test("destroySocket never calls a socket gone while it is still listed", async () => {
    const sockets = await group("inet", "127.0.0.1", nextPort++, rx4, 2);
    const bySport = () =>
      listSockets({
        netns: handle,
        protocols: ["udp"],
        states: ["established"],
        filter: { sport: sockets[0]!.sport },
      });
    const listed = bySport();
    assert.equal(listed.length, 2);
    // In reverse listing order, the first request names the socket the kernel's lookup does not find.
    const outcomes = listed.reverse().map((s) => {
      try {
        const outcome = destroySocket(s, handle);
        if (outcome === "gone") assert.ok(!bySport().some((l) => l.cookie === s.cookie), "gone but listed");
        return outcome;
      } catch (err) {
        assert.ok(err instanceof DestroyError, String(err));
        assert.equal(err.code, "ENOENT");
        assert.match(err.message, /SO_REUSEPORT/);
        return "shadowed";
      }
    });
    assert.ok(!outcomes.includes("gone"), outcomes.join());
    // Whichever stood in the way is destroyed now: what is left destroys.
    for (const s of bySport()) assert.equal(destroySocket(s, handle), "destroyed");
    await holder.waitFor(sockets, "ECONNABORTED");
  });

  test("a group that cannot be destroyed whole is reported failed, not gone", async () => {
    // Bound, unconnected members: a destroy leaves such a socket in the table (its port is locked
    // by bind), so the lookup keeps finding the same one and the others can never be reached.
    const port = nextPort++;
    const sockets = await holder.open(
      { kind: "udp", reusePort: true, bind: { address: "127.0.0.1", port } },
      3,
    );
    const report = destroySockets({
      netns: handle,
      protocols: ["udp"],
      states: ["close"],
      filter: { sport: port },
    });
    assert.equal(report.matched, 3);
    assert.equal(report.gone, 0, "no socket of the group is gone");
    assert.equal(report.destroyed + report.failed.length, 3);
    assert.ok(report.failed.length >= 1);
    for (const f of report.failed) {
      assert.equal(f.code, "ENOENT");
      assert.equal(f.message, SHADOWED_MESSAGE);
    }
    assert.equal(sockets.length, 3);
  });
});
