/**
 * Reports balance (matched = destroyed + gone + failed + skipped) in every namespace and in every
 * total, also when a run breaks after destroying began: the second netlink socket cannot be opened
 * (EMFILE), the caller's predicate throws after a batch was destroyed, the terminator's logger or
 * onNamespace callback throws.
 */
import assert from "node:assert/strict";
import { closeSync, openSync } from "node:fs";
import { after, before, test } from "node:test";
import { fromName, type NetNS } from "../../src/netns/index.js";
import { type DestroyReport, destroySockets } from "../../src/sockets/index.js";
import { BackendTerminator, type TerminationReport } from "../../src/terminator/index.js";
import { describeAsRoot, startUdpScene, type UdpScene } from "../kit/index.js";
import { type NamespaceSource, targetsFrom } from "./seam.js";

function assertBalanced(r: DestroyReport, where: string): void {
  assert.equal(r.matched, r.destroyed + r.gone + r.failed.length + r.skipped, `${where} balances`);
}

function assertTerminationBalanced(report: TerminationReport): void {
  const t = report.total;
  assert.equal(t.matched, t.destroyed + t.gone + t.failed.length + t.skipped, "the total balances");
  let matched = 0;
  for (const n of report.namespaces) {
    if (n.report) assertBalanced(n.report, n.netns);
    matched += n.report?.matched ?? 0;
  }
  assert.equal(t.matched, matched, "the total is the sum of the namespaces");
}

/** Open descriptors until this process has none left (EMFILE); returns them for closing. */
function exhaustDescriptors(): number[] {
  const fds: number[] = [];
  for (;;) {
    try {
      fds.push(openSync("/dev/null", "r"));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EMFILE") throw err;
      return fds;
    }
  }
}

describeAsRoot("balanced reports when a run breaks", () => {
  const scenes: UdpScene[] = [];
  const handles: NetNS[] = [];

  before(async () => {
    scenes.push(await startUdpScene("bal-a"));
    // Each namespace's kernel picks its receiver's port; backend(i) must name scene i's alone.
    let b = await startUdpScene("bal-b");
    while (b.receiver.sport === scenes[0]!.receiver.sport) {
      await b.stop();
      b = await startUdpScene("bal-b");
    }
    scenes.push(b);
    for (const s of scenes) handles.push(fromName(s.ns.name));
  });
  after(async () => {
    for (const h of handles) h.close();
    for (const s of scenes) await s.stop();
  });

  const source = (): NamespaceSource => ({
    failures: [],
    *[Symbol.iterator]() {
      for (let i = 0; i < scenes.length; i++) yield { name: scenes[i]!.ns.name, netns: handles[i]! };
    },
  });
  const backend = (i: number) => ({ address: "127.0.0.1", port: scenes[i]!.receiver.sport });

  test("EMFILE opening the second netlink socket mid-dump: the queued sockets are counted failed", async () => {
    const [scene] = scenes;
    const clients = await scene!.clients(6);
    let filler: number[] = [];
    try {
      const report = destroySockets({
        netns: handles[0],
        protocols: ["udp"],
        filter: `dst 127.0.0.1:${scene!.receiver.sport}`,
        batchSize: 2,
        predicate: () => {
          // Mid-dump, before the first batch fills: no descriptor is left for a second socket.
          if (filler.length === 0) filler = exhaustDescriptors();
          return true;
        },
      });
      for (const fd of filler.splice(0)) closeSync(fd);
      assertBalanced(report, "the report");
      assert.ok(report.matched >= 2, String(report.matched));
      assert.deepEqual(
        report.failures.map((f) => [f.netns, (f.error as { code?: string }).code]),
        [[scene!.ns.name, "EMFILE"]],
      );
      assert.ok(report.failed.length >= 2);
      for (const f of report.failed) assert.equal(f.code, "EMFILE");
    } finally {
      for (const fd of filler) closeSync(fd);
      await scene!.holder.close(clients);
    }
  });

  test("a terminator predicate that throws after a batch: its namespace's destroyed sockets stay in the total", async () => {
    const [scene] = scenes;
    const clients = await scene!.clients(600);
    let calls = 0;
    const terminator = new BackendTerminator(
      {
        predicate: () => {
          if (++calls === clients.length) throw new Error("veto map unavailable");
          return true;
        },
      },
      { targets: targetsFrom(source, false) },
    );
    const report = terminator.terminate(backend(0));
    assertTerminationBalanced(report);
    const [first, second] = report.namespaces;
    assert.equal(first?.error?.name, "PredicateError");
    assert.match(first?.error?.message ?? "", /veto map unavailable/);
    // One full batch (512) went out while the dump ran; the rest was queued and not sent.
    assert.deepEqual(
      [report.total.matched, report.total.destroyed, report.total.skipped],
      [clients.length - 1, 512, clients.length - 1 - 512],
    );
    assert.equal(second?.error, undefined, "the next namespace is still visited");
    assert.equal(report.ok, false);
    await scene!.holder.close(clients);
  });

  test("a logger and an onNamespace that throw neither end the walk nor fail a namespace", async () => {
    const clients = await Promise.all(scenes.map((s) => s.clients(2)));
    const terminator = new BackendTerminator(
      {
        logger: {
          info: () => {
            throw new Error("log sink down");
          },
          warn: () => {
            throw new Error("log sink down");
          },
        },
        onNamespace: () => {
          throw new Error("progress bar bug");
        },
      },
      { targets: targetsFrom(source, false) },
    );
    const reports = [terminator.terminate(backend(0)), terminator.terminate(backend(1))];
    for (const [i, report] of reports.entries()) {
      assertTerminationBalanced(report);
      assert.deepEqual(
        report.namespaces.map((n) => [n.netns, n.error, n.report?.destroyed]),
        scenes.map((s, j) => [s.ns.name, undefined, i === j ? 2 : 0]),
      );
      assert.equal(report.ok, true);
      assert.ok(report.callbackErrors.some((e) => e.message === "progress bar bug"));
      assert.ok(report.callbackErrors.some((e) => e.message === "log sink down"));
    }
    await scenes[0]!.holder.waitFor(clients[0]!, "ECONNABORTED");
    await scenes[1]!.holder.waitFor(clients[1]!, "ECONNABORTED");
  });
});
