/**
 * prepareDestroy's scans opened ahead, against the real kernel: a namespace whose first dump was
 * sent on another thread before its turn is destroyed exactly as destroySockets destroys it, and a
 * scan opened ahead and never run is closed without leaking its descriptor or sending its request
 * down a descriptor number the next socket was given (the kernel would answer that socket's own
 * dump EBUSY).
 */
import assert from "node:assert/strict";
import { pbkdf2 } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { NETLINK_SOCK_DIAG } from "../../src/diag/constants.js";
import { NetlinkSocket } from "../../src/netlink/index.js";
import { fromPath, type NetNS, type Target } from "../../src/netns/index.js";
import { destroySockets, prepareDestroy } from "../../src/sockets/index.js";
import { readable } from "../../src/sys/socket.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Population,
  type ScratchNetns,
} from "../kit/index.js";

const TARGET = { address: "127.0.0.1", port: 5301 };
const QUERY = { protocols: ["udp" as const], filter: `dst ${TARGET.address}:${TARGET.port}` };
const PER_NAMESPACE = { total: 60, targetCount: 20 };
/** The sockets this process holds, by inode ("socket:[N]"). */
function openSockets(): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      if (link.startsWith("socket:")) out.add(link);
    } catch {
      // closed between the listing and the look
    }
  }
  return out;
}

/** Work that holds a thread of libuv's pool (4 by default) for a while. */
const holdPoolThread = (rounds: number) => promisify(pbkdf2)("sockdiag", "ahead", rounds, 32, "sha256");

describeAsRoot("destroying namespace by namespace, the next one's dump sent ahead", () => {
  const scratch: ScratchNetns[] = [];
  const pops: Population[] = [];
  const handles: NetNS[] = [];
  const targets: Target[] = [];
  before(async () => {
    await cleanupLeftovers();
    for (let i = 0; i < 3; i++) {
      const ns = await createNetns("ahead");
      scratch.push(ns);
      pops.push(
        await Population.start({ netnsPath: ns.path, ...PER_NAMESPACE, target: TARGET, perHolder: 60 }),
      );
      const netns = fromPath(ns.path);
      handles.push(netns);
      targets.push({ netns, ref: netns.ref, label: ns.name });
    }
  });
  after(async () => {
    for (const h of handles) h.close();
    for (const p of pops) await p.stop();
    for (const ns of scratch) await ns.remove();
  });

  test("a namespace opened ahead loses exactly its sockets connected to the target", async () => {
    const prepared = prepareDestroy(QUERY);
    const [a, b] = targets as [Target, Target];
    const before = openSockets();
    const scanB = prepared.open(b);
    prepared.sendAhead(scanB);
    const openedAhead = [...openSockets()].filter((s) => !before.has(s));
    assert.equal(openedAhead.length, 1, "open opened b's socket");
    const first = prepared.runIn(a);
    const destroyed: string[] = [];
    const usedForB: string[][] = [];
    const second = prepared.runIn(
      b,
      (s, outcome) => {
        if (outcome === "destroyed") destroyed.push(s.cookie.toString());
        usedForB.push([...openSockets()].filter((x) => !before.has(x)));
      },
      scanB,
    );
    // b was dumped on the socket opened ahead, not on one opened again.
    assert.ok(usedForB.length > 0);
    assert.ok(
      usedForB.every((open) => open.length === 1 && open[0] === openedAhead[0]),
      JSON.stringify(usedForB),
    );
    for (const r of [first, second])
      assert.deepEqual([r.matched, r.destroyed, r.gone, r.failed, r.skipped], [20, 20, 0, [], 0]);
    assert.deepEqual(destroyed.sort(), pops[1]!.targets.map((m) => m.socket.cookie).sort());
    await pops[1]!.waitFor(pops[1]!.targets, "ECONNABORTED");
  });

  test("a scan opened ahead and never run leaves no descriptor and no request behind", () => {
    const c = targets[2]!;
    const before = readdirSync("/proc/self/fd").length;
    for (let i = 0; i < 20; i++) {
      const prepared = prepareDestroy({ ...QUERY, dryRun: true });
      const scan = prepared.open(c);
      prepared.sendAhead(scan);
      scan[Symbol.dispose]();
      // The next socket may get the closed one's number: its own dump must be answered in full.
      const report = destroySockets({ ...QUERY, dryRun: true, netns: c.netns });
      assert.deepEqual([report.matched, report.failures], [20, []]);
    }
    assert.equal(readdirSync("/proc/self/fd").length, before);
  });

  test("closing a scan whose request still waits for a thread waits for it: it never reaches the next socket", async () => {
    // Every thread of the pool busy: the request sent ahead waits in the queue.
    const busy = Array.from({ length: 4 }, () => holdPoolThread(200_000));
    const prepared = prepareDestroy({ ...QUERY, dryRun: true });
    const scan = prepared.open(targets[2]!);
    prepared.sendAhead(scan);
    scan[Symbol.dispose]();
    // Likely given the number of the socket just closed.
    using probe = NetlinkSocket.open(NETLINK_SOCK_DIAG);
    await Promise.all(busy);
    // Queued after the request: once these ran, so has it.
    await Promise.all(Array.from({ length: 4 }, () => holdPoolThread(1)));
    assert.deepEqual(
      readable([probe.fd], 0),
      [false],
      "the probe socket received an answer it never asked for",
    );
  });
});
