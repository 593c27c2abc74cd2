import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { fromName } from "../../src/netns/index.js";
import { iterateSockets, listSockets, type NamespacedQuery } from "../../src/sockets/index.js";
import { cleanupLeftovers, describeAsRoot, type HeldSocket } from "../kit/index.js";
import { assertAllListed, keyOf, type ListScene, startScene } from "./list-scene.js";

const EVERY_PROTOCOL = ["tcp", "udp", "udplite", "mptcp", "unix"] as const;

describeAsRoot("listSockets in a namespace, against the holder's records", () => {
  let scene: ListScene;
  /** Inodes of MPTCP sockets: their TCP subflows are listed under tcp with the same inode. */
  let mptcpInodes: Set<number>;

  before(async () => {
    await cleanupLeftovers();
    scene = await startScene();
    mptcpInodes = new Set(scene.held.filter((s) => s.protocol === "mptcp").map((s) => s.inode));
  });
  after(async () => {
    await scene?.stop();
  });

  /** The listing of `query` in the scene, without the MPTCP subflows no holder record stands for. */
  function list(query: NamespacedQuery): Socket[] {
    return listSockets({ netns: scene.ns.name, ...query }).filter(
      (s) => !(s.protocol === "tcp" && mptcpInodes.has(s.inode)),
    );
  }

  /** Assert `query` lists exactly the held sockets `expected` picks, each with the holder's fields. */
  function assertLists(query: NamespacedQuery, expected: (s: HeldSocket) => boolean): void {
    const got = list(query);
    const want = scene.listed.filter(expected);
    assert.ok(want.length > 0, "the scene holds sockets of this query");
    assert.deepEqual(got.map(keyOf).sort(), want.map(keyOf).sort(), JSON.stringify(query));
    assertAllListed(got, want);
  }

  test("every socket the holder opened is listed with its family, protocol, addresses, state, inode and cookie", () => {
    const got = list({ protocols: EVERY_PROTOCOL, states: ["all"] });
    assertAllListed(got, scene.listed);
    // Covered: each protocol, each family, v4-mapped addresses, each unix type and kind of name.
    const kinds = new Set(scene.listed.map((s) => `${s.family}/${s.protocol}/${s.type ?? ""}`));
    for (const kind of [
      "inet/tcp/",
      "inet6/tcp/",
      "inet/udp/",
      "inet6/udp/",
      "inet/udplite/",
      "inet6/udplite/",
      "inet/mptcp/",
      "inet6/mptcp/",
      "unix/unix/stream",
      "unix/unix/dgram",
      "unix/unix/seqpacket",
    ])
      assert.ok(kinds.has(kind), `the scene holds a ${kind} socket`);
    assert.ok(got.some((s) => s.family === "inet6" && s.dst.startsWith("::ffff:127.")));
    assert.ok(got.some((s) => s.family === "unix" && s.name?.startsWith("@")));
    assert.ok(got.some((s) => s.family === "unix" && s.name?.startsWith("/")));
    assert.ok(got.some((s) => s.family === "unix" && s.name === undefined));
  });

  test("nothing but the holder's sockets is listed in its namespace", () => {
    const got = list({ protocols: EVERY_PROTOCOL, states: ["all"] });
    assert.deepEqual(got.map(keyOf).sort(), scene.listed.map(keyOf).sort());
    assert.ok(
      scene.held.some((s) => !s.listed),
      "the scene holds an unbound UDP socket that no table lists",
    );
  });

  test("the namespace label is copied onto every socket", () => {
    const got = list({ protocols: EVERY_PROTOCOL, states: ["all"] });
    assert.deepEqual([...new Set(got.map((s) => s.netns?.label))], [scene.ns.name]);
  });

  test("the default query lists TCP and UDP in every state", () => {
    assertLists({}, (s) => s.protocol === "tcp" || s.protocol === "udp");
  });

  test("protocols select the sockets of each protocol", () => {
    for (const p of EVERY_PROTOCOL) assertLists({ protocols: [p], states: ["all"] }, (s) => s.protocol === p);
  });

  test("families select IPv4 or IPv6 (v4-mapped addresses are IPv6 sockets)", () => {
    const inet = ["tcp", "udp", "udplite", "mptcp"] as const;
    assertLists({ protocols: inet, families: ["inet"] }, (s) => s.family === "inet");
    assertLists({ protocols: inet, families: ["inet6"] }, (s) => s.family === "inet6");
  });

  test("states and exclude select by state, for inet and unix alike", () => {
    assertLists({ protocols: EVERY_PROTOCOL, states: ["listening"] }, (s) => s.state === "listening");
    assertLists({ protocols: EVERY_PROTOCOL, states: ["established"] }, (s) => s.state === "established");
    assertLists({ protocols: EVERY_PROTOCOL, states: ["close"] }, (s) => s.state === "close");
    assertLists(
      { protocols: EVERY_PROTOCOL, states: ["all"], exclude: ["listening", "close"] },
      (s) => s.state === "established",
    );
  });

  test("a filter selects inet sockets, in the kernel and in user space", () => {
    const receiver = scene.listed.find((s) => s.protocol === "udp" && s.src === "127.0.0.1");
    assert.ok(receiver);
    const toReceiver = (s: HeldSocket) => s.protocol === "udp" && s.dport === receiver.sport;
    assertLists({ protocols: ["udp"], filter: `dport = :${receiver.sport}` }, toReceiver);
    assertLists({ protocols: ["udp"], filter: { dport: receiver.sport } }, toReceiver);
    assertLists(
      { protocols: ["udp"], filter: ["dst", "[::ffff:127.0.0.1]"] },
      (s) => s.protocol === "udp" && s.dst === "::ffff:127.0.0.1",
    );
    // Filters speak of inet addresses and ports: asking for unix sockets with one is refused.
    assert.throws(
      () => list({ protocols: ["udp", "unix"], filter: "dport = :53" }),
      (err: Error) => err.name === "QueryError" && /unix/.test(err.message),
    );
  });

  test("a namespace given by path or by handle lists the same sockets as by name", () => {
    const byName = list({ protocols: EVERY_PROTOCOL }).map(keyOf).sort();
    const byPath = listSockets({ netns: scene.ns.path, protocols: EVERY_PROTOCOL });
    assert.deepEqual(
      byPath
        .filter((s) => !(s.protocol === "tcp" && mptcpInodes.has(s.inode)))
        .map(keyOf)
        .sort(),
      byName,
    );
    assert.ok(byPath.every((s) => s.netns?.label === scene.ns.path));
    using handle = fromName(scene.ns.name);
    const byHandle = listSockets({ netns: handle, protocols: EVERY_PROTOCOL });
    assert.deepEqual(
      byHandle
        .filter((s) => !(s.protocol === "tcp" && mptcpInodes.has(s.inode)))
        .map(keyOf)
        .sort(),
      byName,
    );
    // The handle is still the caller's: listing did not close it.
    assert.equal(listSockets({ netns: handle, protocols: ["unix"] }).length > 0, true);
  });

  test("iterateSockets streams the same sockets and can be iterated again", () => {
    const iteration = iterateSockets({ netns: scene.ns.name, protocols: EVERY_PROTOCOL, states: ["all"] });
    const once = [...iteration].map(keyOf).sort();
    const twice = [...iteration].map(keyOf).sort();
    assert.deepEqual(once, twice);
    assert.deepEqual(iteration.failures, []);
    assert.equal(once.length, listSockets({ netns: scene.ns.name, protocols: EVERY_PROTOCOL }).length);
  });

  test("closed sockets are no longer listed", async () => {
    const [extra] = await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.2" } });
    assert.ok(extra);
    const has = () => list({ protocols: ["udp"] }).some((s) => keyOf(s) === keyOf(extra));
    assert.equal(has(), true);
    await scene.holder.close([extra]);
    assert.equal(has(), false);
  });
});
