/**
 * BackendTerminator.terminateMany against the real kernel, in the scene of the terminator tests:
 * several backends in one pass must abort exactly their clients in every namespace, count each
 * socket for its own backend (per backend and per namespace, balanced), and list each namespace
 * once — not once per backend.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type NetlinkOpener, openNetlinkIn, targetLabel } from "../../src/netns/index.js";
import type { Tally } from "../../src/run/index.js";
import { BackendTerminator, type BatchTerminationReport } from "../../src/terminator/index.js";
import { CountingConnection } from "../kit/fake-netlink.js";
import { describeAsRoot } from "../kit/root.js";
import { HOST, type Scene, useScene } from "./scene.js";

const NETLINK_SOCK_DIAG = 4;
const SOCK_DIAG_BY_FAMILY = 20;
const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO_UDP = 17;

const tally = (matched: number, destroyed = matched): Tally => ({
  matched,
  destroyed,
  wouldDestroy: 0,
  gone: 0,
  failed: [],
  skipped: 0,
});

/** Every namespace's per-backend counts add up to its report, and every backend's to the total. */
function assertBalanced(report: BatchTerminationReport): void {
  const sum = (ts: readonly Tally[]): Tally =>
    ts.reduce(
      (a, t) => ({
        matched: a.matched + t.matched,
        destroyed: a.destroyed + t.destroyed,
        wouldDestroy: a.wouldDestroy + t.wouldDestroy,
        gone: a.gone + t.gone,
        failed: [...a.failed, ...t.failed],
        skipped: a.skipped + t.skipped,
      }),
      tally(0),
    );
  for (const n of report.namespaces) {
    const r = n.report!;
    assert.deepEqual(sum(n.backends), {
      matched: r.matched,
      destroyed: r.destroyed,
      wouldDestroy: r.wouldDestroy,
      gone: r.gone,
      failed: r.failed,
      skipped: r.skipped,
    });
    assert.equal(r.matched, r.destroyed + r.wouldDestroy + r.gone + r.failed.length + r.skipped);
  }
  report.backends.forEach((b, i) => {
    assert.deepEqual(b.total, sum(report.namespaces.map((n) => n.backends[i]!)));
  });
  assert.deepEqual(report.total, sum(report.backends.map((b) => b.total)));
}

describeAsRoot("BackendTerminator.terminateMany", () => {
  let scene!: Scene;
  const open = useScene("many", (s) => {
    scene = s;
  });

  test("two backends in one pass: each namespace destroyed once, each socket counted for its backend", async () => {
    const c = await open();
    // Real sock_diag connections inside each namespace, counting the dumps made there.
    const dumps: [string, number, number][] = [];
    const conns: [string, CountingConnection][] = [];
    const opener: NetlinkOpener = (protocol, target) => {
      const conn = new CountingConnection(openNetlinkIn(target.netns, protocol));
      if (protocol === NETLINK_SOCK_DIAG) conns.push([targetLabel(target), conn]);
      return conn;
    };
    const report = new BackendTerminator(
      { netnsDirs: [scene.dir], discover: false },
      { open: opener },
    ).terminateMany([
      { address: "127.0.0.1", port: scene.portA },
      { address: "0:0::1", port: scene.portB },
      { address: "127.0.0.1", port: scene.portA }, // the same backend again: one backend
    ]);

    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m" || kind === "b6");
    const nodes = [HOST, ...scene.pinnedNames];
    for (const [name, conn] of conns)
      for (const m of conn.sent)
        if (m.type === SOCK_DIAG_BY_FAMILY) dumps.push([name, m.payload[0]!, m.payload[1]!]);
    // One UDP dump per family in each namespace, for both backends: not one per backend.
    assert.deepEqual(
      dumps,
      nodes.flatMap((name) => [
        [name, AF_INET, IPPROTO_UDP],
        [name, AF_INET6, IPPROTO_UDP],
      ]),
      "each namespace listed once for both backends",
    );
    assert.deepEqual(
      report.backends.map((b) => b.backend),
      [
        { address: "127.0.0.1", port: scene.portA, protocol: "udp" },
        { address: "::1", port: scene.portB, protocol: "udp" },
      ],
    );
    assert.deepEqual(
      report.namespaces.map((n) => [n.netns, n.backends]),
      nodes.map((name) => [name, [tally(3), tally(1)]]),
    );
    assert.deepEqual(
      report.backends.map((b) => b.total),
      [tally(12), tally(4)],
    );
    assertBalanced(report);
    assert.equal(report.ok, true);
  });

  test("each backend keeps its own protocol: a TCP backend's endpoint leaves UDP clients alone", async () => {
    const c = await open();
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false }).terminateMany([
      { address: "127.0.0.1", port: scene.portA, protocol: "any" },
      { address: "::1", port: scene.portB, protocol: "tcp" },
    ]);

    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    assert.deepEqual(
      report.backends.map((b) => b.total),
      [tally(12), tally(0)],
    );
    assertBalanced(report);
  });

  test("a dry run counts per backend and destroys nothing; a veto keeps a socket out of every count", async () => {
    const c = await open();
    const kept = BigInt(c.get(HOST)!.b4[0]!.cookie);
    const report = new BackendTerminator({
      netnsDirs: [scene.dir],
      discover: false,
      dryRun: true,
      predicate: (s) => s.cookie !== kept,
    }).terminateMany([
      { address: "127.0.0.1", port: scene.portA },
      { address: "127.0.0.1", port: scene.portB },
    ]);

    await scene.expect(c, () => false);
    const dry = (matched: number): Tally => ({ ...tally(matched, 0), wouldDestroy: matched });
    assert.deepEqual(
      report.namespaces.map((n) => n.backends),
      [
        [dry(3), dry(1)],
        [dry(3), dry(2)],
        [dry(3), dry(2)],
        [dry(3), dry(2)],
      ],
    );
    assertBalanced(report);
  });

  test("an empty list visits nothing; a bad backend throws before anything is touched", async () => {
    const c = await open();
    const terminator = new BackendTerminator({ netnsDirs: [scene.dir], discover: false });
    const empty = terminator.terminateMany([]);
    assert.deepEqual(empty.namespaces, []);
    assert.deepEqual(empty.total, tally(0));
    assert.equal(empty.ok, true);
    assert.throws(
      () =>
        terminator.terminateMany([
          { address: "127.0.0.1", port: scene.portA },
          { address: "127.0.0.1", port: 70000 },
        ]),
      { name: "AddressError", message: /port 70000 is out of range/ },
    );
    await scene.expect(c, () => false);
  });
});
