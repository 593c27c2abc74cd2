/**
 * BackendTerminator against the real kernel, modelled on Cilium's TerminateUDPConnectionsToBackend
 * test: the host and three namespaces pinned in a test-owned directory, UDP clients of two backends
 * over IPv4, v4-mapped IPv6 and IPv6; terminating one backend must abort exactly its clients, in
 * every namespace, and leave everything else working.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { InetSocket } from "../../src/diag/socket.js";
import { allNetns, current } from "../../src/netns/index.js";
import {
  BackendTerminator,
  type NamespaceResult,
  type TerminationReport,
  terminateUDPConnectionsToBackend,
} from "../../src/terminator/index.js";
import { describeAsRoot } from "../kit/root.js";
import { type ClientKind, HOST, type Scene, useScene } from "./scene.js";
import { targetsFrom } from "./seam.js";

/** Per namespace, in visiting order: [name, matched, destroyed]. */
function outcomes(report: TerminationReport): [string, number | undefined, number | undefined][] {
  return report.namespaces.map((n) => [n.netns, n.report?.matched, n.report?.destroyed]);
}

describeAsRoot("BackendTerminator in the host and pinned namespaces", () => {
  let scene!: Scene;
  const open = useScene("term", (s) => {
    scene = s;
  });
  const everywhere = (nodes: readonly string[], n: number) => nodes.map((name) => [name, n, n]);

  test("an IPv4 backend aborts exactly its IPv4 and v4-mapped clients in every namespace", async () => {
    const c = await open();
    const seen: [number, string, number | undefined][] = [];
    const logged: string[] = [];
    const terminator = new BackendTerminator({
      netnsDirs: [scene.dir],
      discover: false,
      onNamespace: (r, i, total) => seen.push([i, r.netns, total]),
      logger: { info: (m, f) => logged.push(`${m} ${f?.netns}`), warn: (m) => logged.push(`warn ${m}`) },
    });
    const report = terminator.terminate({ address: "127.0.0.1", port: scene.portA });

    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    const names = [HOST, ...scene.pinnedNames];
    assert.deepEqual(report.backend, { address: "127.0.0.1", port: scene.portA, protocol: "udp" });
    assert.deepEqual(outcomes(report), everywhere(names, 3));
    for (const n of report.namespaces) {
      const { gone, failed, skipped, stops, dryRun } = n.report ?? {};
      assert.deepEqual(
        { gone, failed, skipped, stops, dryRun, error: n.error, skippedNs: n.skipped },
        { gone: 0, failed: [], skipped: 0, stops: [], dryRun: false, error: undefined, skippedNs: undefined },
        n.netns,
      );
    }
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 12,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(report.failures, []);
    assert.equal(report.unsupported, undefined);
    assert.equal(report.ok, true);
    assert.deepEqual(
      seen,
      names.map((name, i) => [i, name, names.length]),
      "each namespace's place, of how many the walk found",
    );
    // "auto", the default: the one pass's line, then each namespace it found sockets in.
    assert.equal(report.onePass?.used, true, report.onePass?.message);
    assert.deepEqual(logged, ["one pass undefined", ...names.map((name) => `terminated sockets ${name}`)]);
  });

  test("an IPv6 backend [::1]:PORT aborts only the IPv6 sockets connected to ::1 (injected source)", async () => {
    const c = await open();
    const terminator = new BackendTerminator(
      {},
      { targets: targetsFrom(() => allNetns({ netnsDirs: [scene.dir] })) },
    );
    const report = terminator.terminate({ address: "::1", port: scene.portA });

    await scene.expect(c, (_node, kind) => kind === "a6");
    assert.deepEqual(outcomes(report), everywhere([HOST, ...scene.pinnedNames], 1));
    assert.deepEqual(report.total, {
      matched: 4,
      destroyed: 4,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.equal(report.ok, true);
  });

  test("a v4-mapped backend [::ffff:127.0.0.1]:PORT is the IPv4 backend: IPv4 and v4-mapped clients", async () => {
    const c = await open();
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false }).terminate({
      address: "::ffff:127.0.0.1",
      port: scene.portB,
    });

    await scene.expect(c, (_node, kind) => kind === "b4" || kind === "b4m");
    assert.deepEqual(report.backend, { address: "127.0.0.1", port: scene.portB, protocol: "udp" });
    assert.deepEqual(outcomes(report), everywhere([HOST, ...scene.pinnedNames], 2));
  });

  test("a handle of the caller's own namespace aborts the host's clients only and visits no other", async () => {
    const c = await open();
    using own = current();
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false, netns: own }).terminate({
      address: "127.0.0.1",
      port: scene.portA,
    });

    await scene.expect(c, (node, kind) => node === HOST && (kind === "a4" || kind === "a4m"));
    assert.deepEqual(outcomes(report), [[HOST, 3, 3]]);
    assert.equal(report.ok, true);
  });

  test("a predicate that vetoes sockets by cookie keeps them alive; the rest are aborted", async () => {
    const c = await open();
    const [ns1, ns2] = scene.pinnedNames as [string, string];
    const kept = [c.get(HOST)!.a4m[0]!, c.get(ns1)!.a4[1]!, c.get(ns2)!.a4[0]!];
    const keptCookies = new Set(kept.map((s) => BigInt(s.cookie)));
    const asked: bigint[] = [];
    const predicate = (s: InetSocket) => {
      asked.push(s.cookie);
      return !keptCookies.has(s.cookie);
    };
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false, predicate }).terminate({
      address: "127.0.0.1",
      port: scene.portA,
    });

    await scene.expect(c, (_node, kind, s) => (kind === "a4" || kind === "a4m") && !kept.includes(s));
    assert.equal(asked.length, 12, "the predicate sees every candidate, and only those");
    for (const k of keptCookies) assert.ok(asked.includes(k));
    assert.deepEqual(report.total, {
      matched: 9,
      destroyed: 9,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(
      report.namespaces.map((n) => n.report?.matched),
      [2, 2, 2, 3],
    );
  });

  test("a dry run counts every match and destroys nothing", async () => {
    const c = await open();
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false, dryRun: true }).terminate(
      {
        address: "127.0.0.1",
        port: scene.portA,
      },
    );

    await scene.expect(c, () => false);
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 0,
      wouldDestroy: 12,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.ok(report.namespaces.every((n: NamespaceResult) => n.report?.dryRun === true));
    assert.equal(report.ok, true);
  });

  test("protocol tcp leaves UDP clients of the same backend alone", async () => {
    const c = await open();
    const report = new BackendTerminator({ netnsDirs: [scene.dir], discover: false }).terminate({
      address: "127.0.0.1",
      port: scene.portA,
      protocol: "tcp",
    });

    await scene.expect(c, () => false);
    assert.equal(report.backend.protocol, "tcp");
    assert.deepEqual(outcomes(report), everywhere([HOST, ...scene.pinnedNames], 0));
  });

  test('terminateUDPConnectionsToBackend("127.0.0.1:PORT") and ("[::1]:PORT") with netnsDirs', async () => {
    const c = await open();
    const v4 = terminateUDPConnectionsToBackend(`127.0.0.1:${scene.portB}`, {
      netnsDirs: [scene.dir],
      discover: false,
    });
    const v6 = terminateUDPConnectionsToBackend(`[::1]:${scene.portB}`, {
      netnsDirs: [scene.dir],
      discover: false,
      protocol: "tcp", // ignored: this function is about UDP
    });

    const hit: ClientKind[] = ["b4", "b4m", "b6"];
    await scene.expect(c, (_node, kind) => hit.includes(kind));
    assert.deepEqual(v4.backend, { address: "127.0.0.1", port: scene.portB, protocol: "udp" });
    assert.deepEqual(v6.backend, { address: "::1", port: scene.portB, protocol: "udp" });
    assert.deepEqual(outcomes(v4), everywhere([HOST, ...scene.pinnedNames], 2));
    assert.deepEqual(outcomes(v6), everywhere([HOST, ...scene.pinnedNames], 1));
    assert.ok(v4.ok && v6.ok);
  });

  test("a second run finds nothing left to destroy", async () => {
    const c = await open();
    const terminator = new BackendTerminator({ netnsDirs: [scene.dir], discover: false });
    const first = terminator.terminate({ address: "127.0.0.1", port: scene.portA });
    const second = terminator.terminate({ address: "127.0.0.1", port: scene.portA });

    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    assert.equal(first.total.destroyed, 12);
    assert.deepEqual(second.total, {
      matched: 0,
      destroyed: 0,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.equal(second.ok, true);
  });
});
