/**
 * destroySockets / destroySocket against the real kernel, in a throwaway namespace whose sockets a
 * holder child owns: what matches is destroyed and its owner sees ECONNABORTED; what does not match
 * (or what the predicate vetoes) stays open and working.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { fromName } from "../../src/netns/index.js";
import { PredicateError } from "../../src/run/index.js";
import { DestroyError, destroySocket, destroySockets, listSockets } from "../../src/sockets/index.js";
import { Errno } from "../../src/sys/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  type ScratchNetns,
  type SocketSpec,
} from "../kit/index.js";

/** The sockets a spec opens: `[client, server]` pairs are split by the caller. */
type Held = HeldSocket[];

describeAsRoot("destroySockets in a namespace", () => {
  let ns: ScratchNetns;
  let holder: Holder;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("destroy");
    holder = await Holder.start({ netnsPath: ns.path });
  });

  after(async () => {
    await holder?.stop();
    await ns?.remove();
  });

  const open = async (spec: SocketSpec, count = 1): Promise<Held> => holder.open(spec, count);
  /** A bound UDP socket that clients connect to, so their sends draw no ICMP error. */
  const receiver = async (address: string): Promise<HeldSocket> => {
    const [rx] = await open({ kind: "udp", bind: { address } });
    assert.ok(rx);
    return rx;
  };
  const clients = (address: string, port: number, count: number, family?: "inet" | "inet6") =>
    open({ kind: "udp", connect: { address, port }, ...(family ? { family } : {}) }, count);

  /** Owners of `gone` see ECONNABORTED (and cannot send); `alive` sockets poll EAGAIN and can send. */
  async function assertDestroyedAndAlive(gone: Held, alive: Held): Promise<void> {
    await holder.waitFor(gone, "ECONNABORTED");
    assert.deepEqual(
      await holder.poll(alive),
      alive.map(() => Errno.EAGAIN),
    );
    assert.deepEqual(
      await holder.send(alive),
      alive.map(() => 0),
    );
  }

  const udpQuery = (filter: string) => ({
    netns: ns.name,
    protocols: ["udp"] as const,
    states: ["established"],
    filter,
  });

  test("UDP over IPv4: only the sockets connected to dst ip:port are destroyed", async () => {
    const rx = await receiver("0.0.0.0");
    const other = await receiver("0.0.0.0");
    const targets = await clients("127.0.0.1", rx.sport, 3);
    const sameAddressOtherPort = await clients("127.0.0.1", other.sport, 2);
    const samePortOtherAddress = await clients("127.0.0.2", rx.sport, 2);

    const report = destroySockets(udpQuery(`dst 127.0.0.1:${rx.sport}`));

    const counts = {
      matched: 3,
      destroyed: 3,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
      stops: [],
      dryRun: false,
    };
    assert.deepEqual(report, {
      ...counts,
      namespaces: [{ ...counts, netns: ns.name }],
      failures: [],
      notes: [],
      callbackErrors: [],
    });
    await assertDestroyedAndAlive(targets, [...sameAddressOtherPort, ...samePortOtherAddress]);
    assert.deepEqual(
      await holder.send(targets),
      targets.map(() => Errno.EDESTADDRREQ),
    );
    assert.deepEqual(listSockets(udpQuery(`dst 127.0.0.1:${rx.sport}`)), []);
  });

  test("UDP over IPv6", async () => {
    const rx = await receiver("::");
    const other = await receiver("::");
    const targets = await clients("::1", rx.sport, 3);
    const others = await clients("::1", other.sport, 2);

    const report = destroySockets(udpQuery(`dst [::1]:${rx.sport}`));

    assert.deepEqual([report.matched, report.destroyed, report.failed], [3, 3, []]);
    await assertDestroyedAndAlive(targets, others);
  });

  test("UDP over v4-mapped IPv6: an IPv4 filter matches and destroys inet6 sockets with a mapped peer", async () => {
    const rx = await receiver("0.0.0.0");
    const other = await receiver("0.0.0.0");
    const mapped = await clients("127.0.0.1", rx.sport, 2, "inet6");
    assert.ok(mapped.every((s) => s.family === "inet6" && s.dst === "::ffff:127.0.0.1"));
    const plain = await clients("127.0.0.1", rx.sport, 1);
    const mappedOthers = await clients("127.0.0.1", other.sport, 2, "inet6");

    const report = destroySockets(udpQuery(`dst 127.0.0.1:${rx.sport}`));

    assert.deepEqual([report.matched, report.destroyed, report.failed], [3, 3, []]);
    await assertDestroyedAndAlive([...mapped, ...plain], mappedOthers);
  });

  test("TCP: connections to the backend are aborted, their peers reset; other connections and listeners live", async () => {
    const [backend] = await open({ kind: "listener", bind: { address: "127.0.0.1" } });
    const [otherBackend] = await open({ kind: "listener", bind: { address: "127.0.0.1" } });
    assert.ok(backend && otherBackend);
    const conns = await open({ kind: "connection", listener: backend.id }, 3);
    const otherConns = await open({ kind: "connection", listener: otherBackend.id }, 2);
    const clientsOf = (pairs: Held) => pairs.filter((_, i) => i % 2 === 0);
    const serversOf = (pairs: Held) => pairs.filter((_, i) => i % 2 === 1);

    const report = destroySockets({
      netns: ns.name,
      protocols: ["tcp"],
      states: ["connected"],
      filter: `dst 127.0.0.1:${backend.sport}`,
    });

    assert.deepEqual([report.matched, report.destroyed, report.gone, report.failed], [3, 3, 0, []]);
    await assertDestroyedAndAlive(clientsOf(conns), otherConns);
    // tcp_abort() sends a RST: the accepted side learns of it too.
    await holder.waitFor(serversOf(conns), "ECONNRESET");
    const listening = listSockets({ netns: ns.name, protocols: ["tcp"], states: ["listening"] });
    assert.deepEqual(
      listening.map((s) => s.cookie.toString()).sort(),
      [backend.cookie, otherBackend.cookie].sort(),
    );
  });

  test("the predicate sees every candidate, and a socket it vetoes stays alive", async () => {
    const rx = await receiver("127.0.0.1");
    const other = await receiver("127.0.0.1");
    const candidates = await clients("127.0.0.1", rx.sport, 4);
    const bystanders = await clients("127.0.0.1", other.sport, 2);
    const vetoed = candidates.slice(0, 2);
    const vetoedCookies = new Set(vetoed.map((s) => s.cookie));
    const seen: Socket[] = [];

    const report = destroySockets({
      ...udpQuery(`dst 127.0.0.1:${rx.sport}`),
      predicate: (s) => {
        seen.push(s);
        return !vetoedCookies.has(s.cookie.toString());
      },
    });

    assert.deepEqual(seen.map((s) => s.cookie.toString()).sort(), candidates.map((s) => s.cookie).sort());
    assert.ok(seen.every((s) => s.family === "inet" && s.dst === "127.0.0.1" && s.dport === rx.sport));
    assert.deepEqual([report.matched, report.destroyed, report.failed], [2, 2, []]);
    await assertDestroyedAndAlive(candidates.slice(2), [...vetoed, ...bystanders]);
  });

  test("a predicate that throws aborts the run: PredicateError keeps its error as the cause", () => {
    const boom = new Error("predicate refused");
    assert.throws(
      () =>
        destroySockets({
          netns: ns.name,
          protocols: ["udp"],
          states: ["all"],
          predicate: () => {
            throw boom;
          },
        }),
      (err: unknown) => err instanceof PredicateError && err.cause === boom && err.report.matched === 0,
    );
  });

  test("dryRun counts and reports the matches, destroys nothing", async () => {
    const rx = await receiver("127.0.0.1");
    const targets = await clients("127.0.0.1", rx.sport, 3);
    const outcomes: string[] = [];

    const report = destroySockets({
      ...udpQuery(`dst 127.0.0.1:${rx.sport}`),
      dryRun: true,
      onOutcome: (s, outcome) => outcomes.push(`${s.cookie}:${outcome}`),
    });

    assert.deepEqual(
      [report.dryRun, report.matched, report.destroyed, report.wouldDestroy, report.failed, report.skipped],
      [true, 3, 0, 3, [], 0],
    );
    assert.equal(report.matched, report.wouldDestroy + report.destroyed + report.gone + report.failed.length);
    assert.deepEqual(
      report.namespaces.map((n) => [n.matched, n.wouldDestroy]),
      [[3, 3]],
    );
    assert.deepEqual(outcomes.sort(), targets.map((s) => `${s.cookie}:wouldDestroy`).sort());
    await assertDestroyedAndAlive([], targets);
  });

  test("destroySocket on a listed socket destroys exactly it; on a unix socket it throws EOPNOTSUPP", async () => {
    const rx = await receiver("127.0.0.1");
    const [target, bystander] = (await clients("127.0.0.1", rx.sport, 2)) as [HeldSocket, HeldSocket];
    const listed = listSockets(udpQuery(`dst 127.0.0.1:${rx.sport}`));
    const socket = listed.find((s) => s.cookie.toString() === target.cookie);
    assert.ok(socket, "the target is listed");
    using handle = fromName(ns.name);

    assert.equal(destroySocket(socket, handle), "destroyed");
    await assertDestroyedAndAlive([target], [bystander]);
    assert.equal(destroySocket(socket, handle), "gone");

    const [end] = await open({ kind: "pair", type: "stream" });
    const unix = listSockets({ netns: ns.name, protocols: ["unix"] }).find((s) => s.inode === end?.inode);
    assert.ok(unix, "the unix socket is listed");
    assert.throws(
      () => destroySocket(unix, handle),
      (err: unknown) =>
        err instanceof DestroyError &&
        err.code === "EOPNOTSUPP" &&
        /no SOCK_DESTROY handler/.test(err.message),
    );
  });

  test("destroySocket on a listed netlink socket throws EOPNOTSUPP, as for unix, not a QueryError", () => {
    using handle = fromName(ns.name);
    // Every namespace holds the kernel's own netlink sockets (rtnetlink, uevent, ...).
    const netlink = listSockets({ netns: ns.name, protocols: ["netlink"] });
    assert.ok(netlink.length > 0, "the namespace has netlink sockets");
    assert.throws(
      () => destroySocket(netlink[0]!, handle),
      (err: unknown) => err instanceof DestroyError && err.code === "EOPNOTSUPP",
    );
  });
});
