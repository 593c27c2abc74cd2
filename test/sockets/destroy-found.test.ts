/**
 * Destroying the sockets the one pass found, by tuple and cookie, on the real kernel: in the host
 * and in namespaces the test makes — IPv4, IPv6, v4-mapped, bound to a device (udp_diag's lookup
 * finds it only with its interface) — each found socket is destroyed (its owner reads
 * ECONNABORTED), one closed after the pass counts as gone, bystanders (another backend, another
 * port) live on, and a dry run destroys nothing. Over a fake kernel, without root: batches of the
 * query's size all go out on the namespace's one connection.
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { test } from "node:test";
import { findConnectedSockets } from "../../src/bpf/find.js";
import { type FoundSocket, inetSocketOf } from "../../src/bpf/record.js";
import type { InetSocket } from "../../src/diag/socket.js";
import { type Target, targetsOf } from "../../src/netns/selection.js";
import { prepareDestroy } from "../../src/sockets/destroy.js";
import { AF_INET, AF_INET6, close, MSG_DONTWAIT, recvErrno } from "../../src/sys/socket.js";
import { FAKE, FakeKernel, type FakeSocket } from "../kit/fake-kernel.js";
import { connectedUdpIn, describeAsRoot, type ScratchNetns, withNetns } from "../kit/index.js";

const PORT = 20000 + ((process.pid + 7) % 20000);
const V4 = "127.0.0.79";
const BACKENDS = [
  { address: V4, port: PORT },
  { address: "::1", port: PORT },
];
const FILTER = `dst ${V4}:${PORT} or dst [::ffff:${V4}]:${PORT} or dst [::1]:${PORT}`;

const ECONNABORTED = 103;
const EAGAIN = 11;
const buffer = Buffer.alloc(16);
/** What reading `fd` answers: ECONNABORTED once destroyed, EAGAIN while alive. */
const readErrno = (fd: number): number => -recvErrno(fd, buffer, MSG_DONTWAIT);

/** The one target of `path` (the host's when undefined), for runFound. */
function* targetOf(path: string | undefined): Generator<Target> {
  yield* targetsOf(path === undefined ? {} : { netns: path }, { failures: [], notes: [] });
}

describeAsRoot("destroying the sockets the one pass found", () => {
  test("each found socket is destroyed by tuple and cookie; one closed meanwhile is gone", async () => {
    const fds: number[] = [];
    try {
      await withNetns(2, async (nss: ScratchNetns[]) => {
        for (const ns of nss) await ns.ip("link", "set", "lo", "up");
        const [a, b] = nss as [ScratchNetns, ScratchNetns];
        const wanted = [
          connectedUdpIn(undefined, AF_INET, V4, PORT),
          connectedUdpIn(a.path, AF_INET, V4, PORT),
          connectedUdpIn(a.path, AF_INET6, `::ffff:${V4}`, PORT),
          connectedUdpIn(b.path, AF_INET6, "::1", PORT),
          connectedUdpIn(b.path, AF_INET, V4, PORT, "lo"),
        ];
        const closedLater = connectedUdpIn(a.path, AF_INET, V4, PORT);
        const bystanders = [
          connectedUdpIn(a.path, AF_INET, V4, PORT + 1),
          connectedUdpIn(b.path, AF_INET, "127.0.0.80", PORT),
        ];
        fds.push(...wanted, ...bystanders);
        const { sockets } = findConnectedSockets({ backends: BACKENDS });
        const byNetns = new Map<number, FoundSocket[]>();
        for (const s of sockets) byNetns.set(s.netns, [...(byNetns.get(s.netns) ?? []), s]);
        close(closedLater);
        const paths = [undefined, a.path, b.path];
        const ours = (path: string | undefined) =>
          (byNetns.get(statSync(path ?? "/proc/self/ns/net").ino) ?? []).filter((s) => s.dport === PORT);
        assert.deepEqual(
          paths.map((p) => ours(p).length),
          [1, 3, 2],
        );
        assert.ok(
          ours(b.path).some((s) => s.boundIfindex === 1),
          "one bound to lo",
        );

        // A dry run counts, destroys nothing.
        const dry = prepareDestroy({ protocols: ["udp"], filter: FILTER, dryRun: true });
        for (const path of paths) {
          for (const target of targetOf(path)) {
            const r = dry.runFound(
              target,
              ours(path).map((s) => inetSocketOf(s, target.ref)),
            );
            assert.equal(r.wouldDestroy, ours(path).length);
            assert.equal(r.destroyed, 0);
          }
        }
        assert.deepEqual(
          wanted.map(readErrno),
          wanted.map(() => EAGAIN),
        );

        const prepared = prepareDestroy({ protocols: ["udp"], filter: FILTER });
        const totals = { destroyed: 0, gone: 0, failed: 0 };
        for (const path of paths) {
          for (const target of targetOf(path)) {
            const r = prepared.runFound(
              target,
              ours(path).map((s) => inetSocketOf(s, target.ref)),
            );
            assert.equal(r.matched, ours(path).length);
            totals.destroyed += r.destroyed;
            totals.gone += r.gone;
            totals.failed += r.failed.length;
          }
        }
        assert.deepEqual(totals, { destroyed: wanted.length, gone: 1, failed: 0 });
        assert.deepEqual(
          wanted.map(readErrno),
          wanted.map(() => ECONNABORTED),
        );
        assert.deepEqual(bystanders.map(readErrno), [EAGAIN, EAGAIN]);
      });
    } finally {
      for (const fd of fds) close(fd);
    }
  });
});

test("found sockets beyond a batch go out on the namespace's one connection, in batches of the query's size", () => {
  const table: FakeSocket[] = Array.from({ length: 5 }, (_, i) => ({
    family: "inet",
    protocol: "udp",
    src: "10.0.0.1",
    sport: 40000 + i,
    dst: "10.0.0.5",
    dport: 53,
    cookie: i + 1,
  }));
  const query = { protocols: ["udp" as const], filter: "dst 10.0.0.5:53", batchSize: 2 };
  // The sockets as a listing gives them (a dry run's outcomes), standing in for the pass's.
  const found: InetSocket[] = [];
  for (const target of targetOf(undefined)) {
    const listing = new FakeKernel({ "(host)": { sockets: [...table] } });
    prepareDestroy({ ...query, dryRun: true }, listing.open).runIn(target, (s) =>
      found.push(s as InetSocket),
    );
  }
  assert.equal(found.length, 5);
  const kernel = new FakeKernel({ "(host)": { sockets: [...table] } });
  for (const target of targetOf(undefined)) {
    const r = prepareDestroy(query, kernel.open).runFound(target, found);
    assert.equal(r.destroyed, 5);
  }
  assert.equal(kernel.opened.length, 1, "no second connection: no dump keeps the first busy");
  const [only] = kernel.opened;
  // The first destroy alone (the probe), then batches of at most 2, each closed by its barrier.
  const perWrite = only!.conn.writes.map((w) => {
    let destroys = 0;
    for (let o = 0; o < w.length; o += w.readUInt32LE(o))
      if (w.readUInt16LE(o + 4) === FAKE.DESTROY) destroys++;
    return destroys;
  });
  assert.deepEqual(perWrite, [1, 1, 2, 1]);
  assert.ok(kernel.allClosed);
});
