import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { after, before, test } from "node:test";
import { Holder, HolderError } from "../kit/holder.js";
import type { HeldSocket } from "../kit/holder-protocol.js";
import { cleanupLeftovers, createNetns, type ScratchNetns } from "../kit/netns.js";
import { describeAsRoot } from "../kit/root.js";
import { ss } from "../kit/ss.js";
import type { SsRecord } from "../kit/ss-parse.js";

const UNIX_NETIDS = { stream: "u_str", dgram: "u_dgr", seqpacket: "u_seq" } as const;

/** The ss row for a held socket: inet by netid, cookie and inode (an accepted MPTCP socket shares its listener's cookie), unix by inode. */
function rowFor(rows: readonly SsRecord[], s: HeldSocket): SsRecord | undefined {
  if (s.family === "unix") return rows.find((r) => r.family === "unix" && r.inode === s.inode);
  return rows.find((r) => r.netid === s.protocol && r.cookie === s.cookie && r.inode === s.inode);
}

describeAsRoot("test kit: holder", () => {
  let ns: ScratchNetns;
  let holder: Holder;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("holder");
    holder = await Holder.start({ netnsPath: ns.path });
  });

  after(async () => {
    await holder?.stop();
    await ns?.remove();
  });

  test("the child lives in the namespace it was given", () => {
    assert.equal(holder.netnsInode, statSync(ns.path).ino);
    assert.notEqual(holder.netnsInode, statSync("/proc/self/ns/net").ino);
  });

  test("every kind of socket shows in ss exactly as the holder reports it", async () => {
    const held: HeldSocket[] = [];
    const open = async (...args: Parameters<Holder["open"]>) => {
      const got = await holder.open(...args);
      held.push(...got);
      return got;
    };
    const [receiver] = await open({ kind: "udp", bind: { address: "127.0.0.1" } });
    assert.ok(receiver);
    await open({ kind: "udp", bind: { port: { from: 7000, to: 7001 } } }, 2);
    await open({ kind: "udp", connect: { address: "127.0.0.1", port: receiver.sport } });
    await open({ kind: "udp", family: "inet6", connect: { address: "127.0.0.1", port: receiver.sport } });
    await open({ kind: "udp", connect: { address: "::1", port: 9 } });
    const [tcp] = await open({ kind: "listener", bind: { address: "127.0.0.1" } });
    const [tcp6] = await open({ kind: "listener", family: "inet6" });
    await open({ kind: "connection", listener: tcp?.id ?? 0 }, 2);
    await open({ kind: "connection", listener: tcp?.id ?? 0, family: "inet6" });
    await open({ kind: "connection", listener: tcp6?.id ?? 0, family: "inet" });
    const [mptcp] = await open({ kind: "listener", protocol: "mptcp", bind: { address: "127.0.0.1" } });
    await open({ kind: "connection", listener: mptcp?.id ?? 0 });
    const [ustream] = await open({
      kind: "unix",
      type: "stream",
      name: `\0sdt-kit-${process.pid}`,
      listen: true,
    });
    await open({ kind: "connection", listener: ustream?.id ?? 0 });
    await open({ kind: "unix", type: "seqpacket", name: `\0sdt-kit-seq-${process.pid}-`, listen: true }, 2);
    await open({ kind: "unix", type: "dgram" });
    await open({ kind: "pair", type: "dgram" });
    await open({ kind: "pair", type: "seqpacket" });

    const rows = await ss(["-a", "-t", "-u", "-x", "-M"], { netns: ns.name });
    for (const s of held) {
      const row = rowFor(rows, s);
      assert.ok(row, `no ss row for ${JSON.stringify(s)}`);
      if (s.family === "unix") {
        assert.deepEqual(
          [row.netid, row.state, row.src, row.peer],
          [UNIX_NETIDS[s.type === undefined || s.type === "raw" ? "stream" : s.type], s.state, s.src, s.peer],
          JSON.stringify(s),
        );
      } else {
        assert.deepEqual(
          [row.family, row.state, row.src, row.sport, row.dst, row.dport],
          [s.family, s.state, s.src, s.sport, s.dst, s.dport],
          JSON.stringify(s),
        );
      }
    }
    // Nothing else is there, but the TCP subflows ss lists for each MPTCP socket (same inode).
    const mptcpInodes = new Set(held.filter((s) => s.protocol === "mptcp").map((s) => s.inode));
    const unexplained = rows.filter(
      (r) =>
        r.family !== "other" &&
        !held.some((s) => rowFor([r], s)) &&
        !(r.netid === "tcp" && mptcpInodes.has(r.inode)),
    );
    assert.deepEqual(unexplained, []);
    assert.equal(new Set(held.map((s) => s.id)).size, held.length);
    await holder.close(held);
  });

  test("v4-mapped peers and wildcard listeners are reported as the kernel sees them", async () => {
    const [listener] = await holder.open({ kind: "listener" });
    assert.deepEqual([listener?.src, listener?.state, listener?.dst], ["0.0.0.0", "listening", "0.0.0.0"]);
    const [client, server] = await holder.open({
      kind: "connection",
      listener: listener?.id ?? 0,
      family: "inet6",
    });
    assert.deepEqual(
      [client?.family, client?.src, client?.dst],
      ["inet6", "::ffff:127.0.0.1", "::ffff:127.0.0.1"],
    );
    assert.deepEqual([server?.family, server?.dst, server?.dport], ["inet", "127.0.0.1", client?.sport]);
    await holder.close([listener, client, server].filter((s) => s !== undefined));
  });

  test("an unbound, unconnected UDP socket is held but not listed", async () => {
    const [s] = await holder.open({ kind: "udp", protocol: "udplite" });
    assert.deepEqual([s?.protocol, s?.listed, s?.sport, s?.state], ["udplite", false, 0, "close"]);
    await holder.close([s?.id ?? 0]);
  });

  test("a failed system call rejects with its SysError code, naming the address", async () => {
    const [a] = await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    await assert.rejects(
      holder.open({ kind: "udp", bind: { address: "127.0.0.1", port: a?.sport ?? 0 } }),
      (e: unknown) =>
        e instanceof HolderError &&
        e.code === "EADDRINUSE" &&
        e.syscall === "bind" &&
        e.reason === "refused" &&
        e.message.includes(`127.0.0.1:${a?.sport}`),
    );
    await holder.close([a?.id ?? 0]);
  });

  test("a batch is all or nothing", async () => {
    const [taken] = await holder.open({ kind: "udp", bind: { address: "127.0.0.1", port: 7103 } });
    await assert.rejects(
      holder.open({ kind: "udp", bind: { address: "127.0.0.1", port: { from: 7100, to: 7104 } } }, 5),
      /open udp #3 of 5: bind\(127\.0\.0\.1:7103\) failed: EADDRINUSE/,
    );
    const rows = await ss(["-u", "-a", "sport", ">=", ":7100", "and", "sport", "<=", ":7104"], {
      netns: ns.name,
    });
    assert.deepEqual(
      rows.map((r) => r.sport),
      [7103],
    );
    await holder.close([taken?.id ?? 0]);
  });

  test("unknown ids and bad specs are rejected", async () => {
    await assert.rejects(holder.poll([424242]), /no socket with id 424242/);
    await assert.rejects(
      holder.open({ kind: "udp", connect: { address: "::1", port: 1 }, family: "inet" }),
      /IPv4 socket/,
    );
    await assert.rejects(holder.open({ kind: "udp" }, 0), /bad count 0/);
  });
});
