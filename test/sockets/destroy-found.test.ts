/**
 * Destroying the sockets the one pass found, by tuple and cookie, on the real kernel: in the host
 * and in namespaces the test makes — IPv4, IPv6, v4-mapped, bound to a device (udp_diag's lookup
 * finds it only with its interface) — each found socket is destroyed (its owner reads
 * ECONNABORTED), one closed after the pass counts as gone, bystanders (another backend, another
 * port) live on, and a dry run destroys nothing.
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { test } from "node:test";
import { findConnectedSockets } from "../../src/bpf/find.js";
import { type FoundSocket, inetSocketOf } from "../../src/bpf/record.js";
import { type Target, targetsOf } from "../../src/netns/selection.js";
import { prepareDestroy } from "../../src/sockets/destroy.js";
import { AF_INET, AF_INET6, close, MSG_DONTWAIT, recvErrno } from "../../src/sys/socket.js";
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
