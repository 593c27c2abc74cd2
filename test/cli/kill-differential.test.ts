/**
 * Differential test: `sockdiag kill -N A FILTER` and `ss -K FILTER` in namespace B, applied to twin
 * populations (the same specs opened in A and in B, so the same addresses and ports: each namespace
 * has its own loopback), must leave exactly the same sockets alive, in the same states. Sockets are
 * compared by protocol, state and 4-tuple, since cookies differ; ephemeral ports (TCP clients and
 * the accepted side's peer port) differ between the twins too, so they are compared as "*" — every
 * filter constant below is under the ephemeral range, so a filter treats all of them alike.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, test } from "node:test";
import {
  cleanupLeftovers,
  describeAsRoot,
  Holder,
  type ScratchNetns,
  type SocketSpec,
  type SsRecord,
  ss,
  ssKill,
  withNetns,
} from "../kit/index.js";
import { sockdiag } from "./cli.js";

const FILTERS: readonly string[] = [
  "dst 127.0.0.3",
  "dst 127.0.0.0/30",
  "dst 127.0.0.3:5000",
  "dst 10.1.0.2:6000",
  "src 10.1.0.1",
  "src 127.0.0.2:11005",
  "dport = :5000",
  "dport == :6000",
  "dport != :5000",
  "dport neq :6000",
  "dport > :5000",
  "dport gt :5001",
  "dport < :6000",
  "dport lt :7000",
  "dport >= :6000",
  "sport ge :12000",
  "sport <= :8001",
  "sport le :11003",
  "sport eq :8000",
  "dst [::1]",
  "dst fd00::/16",
  "dst [fd00::2]:6000",
  "not dst 127.0.0.3",
  "dst 127.0.0.3 or dst 10.1.0.2",
  "dport = :5000 and src 127.0.0.2",
  "( sport >= :11000 and sport < :11006 ) or dport = :8001",
  "src 127.0.0.1 and not dport = :5000",
  "dst 127.0.0.0/8 and ! dst 127.0.0.3",
];

const EXTRA_ADDRESSES = ["10.1.0.1/32", "10.1.0.2/32", "fd00::1/128", "fd00::2/128"];
const UDP_V4_SOURCES = ["127.0.0.1", "127.0.0.2", "10.1.0.1"];
const UDP_V4_PEERS = [
  { address: "127.0.0.3", port: 5000 },
  { address: "127.0.0.4", port: 5001 },
  { address: "10.1.0.2", port: 6000 },
  { address: "127.0.1.9", port: 7000 },
];
const UDP_V6_SOURCES = ["::1", "fd00::1"];
const UDP_V6_PEERS = [
  { address: "::1", port: 5000 },
  { address: "fd00::2", port: 6000 },
  { address: "fd00::2", port: 5001 },
];

/** Every socket spec of a twin, with explicit ports wherever the test chooses them. */
function udpSpecs(): SocketSpec[] {
  const specs: SocketSpec[] = [];
  let port = 11000;
  for (const address of UDP_V4_SOURCES)
    for (const connect of UDP_V4_PEERS) specs.push({ kind: "udp", bind: { address, port: port++ }, connect });
  port = 12000;
  for (const address of UDP_V6_SOURCES)
    for (const connect of UDP_V6_PEERS) specs.push({ kind: "udp", bind: { address, port: port++ }, connect });
  // v4-mapped: inet6 sockets connected to IPv4 peers.
  specs.push({ kind: "udp", family: "inet6", bind: { port: 13000 }, connect: UDP_V4_PEERS[0]! });
  specs.push({ kind: "udp", family: "inet6", bind: { port: 13001 }, connect: UDP_V4_PEERS[2]! });
  // Bound, unconnected.
  specs.push({ kind: "udp", bind: { address: "127.0.0.1", port: 14000 } });
  specs.push({ kind: "udp", bind: { address: "10.1.0.1", port: 14001 } });
  specs.push({ kind: "udp", bind: { address: "::1", port: 14002 } });
  specs.push({ kind: "udp", family: "inet6", bind: { port: 14003 } });
  return specs;
}

/** Open the twin population in one namespace: UDP sockets, TCP listeners and connections. */
async function populate(ns: ScratchNetns, holder: Holder): Promise<void> {
  for (const address of EXTRA_ADDRESSES) {
    await ns.ip("addr", "add", address, "dev", "lo", ...(address.includes(":") ? ["nodad"] : []));
  }
  for (const spec of udpSpecs()) await holder.open(spec);
  const listen = async (address: string, port: number, family?: "inet6") => {
    const [l] = await holder.open({
      kind: "listener",
      bind: { address, port },
      ...(family ? { family } : {}),
    });
    assert.ok(l);
    return l.id;
  };
  const l8000 = await listen("127.0.0.1", 8000);
  const l8001 = await listen("::", 8001, "inet6");
  const l8002 = await listen("10.1.0.1", 8002);
  await holder.open({ kind: "connection", listener: l8000 }, 2);
  await holder.open({ kind: "connection", listener: l8001, family: "inet6" });
  await holder.open({ kind: "connection", listener: l8001, family: "inet" });
  await holder.open({ kind: "connection", listener: l8002 });
}

/** The first port of the ephemeral range: ports from here on are chosen by the kernel. */
const EPHEMERAL_FROM = Number(
  readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
);
const port = (p: number | undefined) => (p !== undefined && p >= EPHEMERAL_FROM ? "*" : String(p));

/** A namespace's sockets as sorted "netid state src:sport dst:dport" keys. */
async function aliveKeys(ns: ScratchNetns): Promise<string[]> {
  const rows = await ss(["-a", "-t", "-u"], { netns: ns.name });
  return rows.map(key).sort();
}
function key(r: SsRecord): string {
  return `${r.netid} ${r.state} ${r.src}:${port(r.sport)} ${r.dst}:${port(r.dport)}`;
}

describeAsRoot("sockdiag kill and ss -K leave the same sockets alive", () => {
  before(async () => {
    await cleanupLeftovers();
  });

  for (const filter of FILTERS) {
    test(filter, async () => {
      await withNetns(2, async ([a, b]) => {
        assert.ok(a && b);
        const holders = await Promise.all([a, b].map((ns) => Holder.start({ netnsPath: ns.path })));
        try {
          await Promise.all([populate(a, holders[0]!), populate(b, holders[1]!)]);
          const before = await aliveKeys(a);
          assert.deepEqual(await aliveKeys(b), before, "the twins start identical");

          const words = filter.split(" ");
          const [ours, theirs] = await Promise.all([
            sockdiag(["kill", "-N", a.name, "-t", "-u", "--all", ...words]),
            ssKill(["-a", "-t", "-u", ...words], { netns: b.name }),
          ]);
          assert.equal(ours.code, 0, ours.stderr);

          const afterA = await aliveKeys(a);
          assert.deepEqual(afterA, await aliveKeys(b));
          // A destroyed UDP socket with a bound port stays listed, disconnected: its key changes.
          assert.ok(theirs.length > 0, "ss -K destroyed something");
          assert.notDeepEqual(afterA, before, "sockdiag kill destroyed something");
        } finally {
          await Promise.all(holders.map((h) => h.stop()));
        }
      });
    });
  }
});
