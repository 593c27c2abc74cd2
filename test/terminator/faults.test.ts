/**
 * BackendTerminator when things go wrong: namespaces that vanish or break while it iterates, pin
 * directories it cannot read, namespaces whose sockets cannot be destroyed (the kernel's answers to
 * SOCK_DESTROY refused on the real connection of one namespace, or a connection that cannot be
 * opened there). It must not hang or crash, must report every failure, and must still terminate
 * everything it can.
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, afterEach, before, test } from "node:test";
import {
  allNetns,
  type NetlinkOpener,
  NetnsRestoreError,
  openNetlinkIn,
  type PinnedNetns,
  targetLabel,
} from "../../src/netns/index.js";
import { BackendTerminator, type TerminationReport } from "../../src/terminator/index.js";
import { CountingConnection, RefusingConnection } from "../kit/fake-netlink.js";
import { describeAsRoot } from "../kit/root.js";
import { HOST, Scene, type SceneClients, threadNetnsInode } from "./scene.js";
import { type NamespaceSource, targetsFrom } from "./seam.js";

const EPERM = 1;
const EOPNOTSUPP = 95;
const NETLINK_SOCK_DIAG = 4;
const SOCK_DESTROY = 21;

/**
 * Real connections inside each namespace, recorded by namespace; in `refusedIn` the kernel's
 * answer to every SOCK_DESTROY is `errno`, and a sock_diag connection there is opened by `opening`
 * when given (which may throw).
 */
function kernel(refusedIn?: string, errno = 0, opening?: () => void) {
  const conns: [string, CountingConnection][] = [];
  const open: NetlinkOpener = (protocol, target) => {
    const name = targetLabel(target);
    const there = name === refusedIn && protocol === NETLINK_SOCK_DIAG;
    if (there) opening?.();
    const real = openNetlinkIn(target.netns, protocol);
    const conn = there
      ? new RefusingConnection(real, (m) => (m.type === SOCK_DESTROY ? errno : 0))
      : new CountingConnection(real);
    conns.push([name, conn]);
    return conn;
  };
  /** The SOCK_DESTROY requests made in `name` (refused ones included). */
  const destroysIn = (name: string) =>
    conns
      .filter(([n]) => n === name)
      .flatMap(([, c]) => c.sent)
      .filter((m) => m.type === SOCK_DESTROY).length;
  return { open, destroysIn };
}

/** A NamespaceSource over allNetns(dir) that calls `between(entry)` after the terminator visited `entry`. */
function sourceWith(dir: string, between: (entry: PinnedNetns) => PinnedNetns | undefined): NamespaceSource {
  const all = allNetns({ netnsDirs: [dir] });
  return {
    failures: all.failures,
    notes: all.notes,
    *[Symbol.iterator]() {
      for (const entry of all) {
        const shown = between(entry);
        if (shown) yield shown;
      }
    },
  };
}

/** Per namespace, in visiting order: [name, destroyed, error name, skipped]. */
function outcomes(report: TerminationReport): unknown[][] {
  // A collaborator's own exception is reported wrapped (ForeignError): name the one it wraps.
  const name = (e: Error | undefined) => (e?.name === "ForeignError" ? (e.cause as Error).name : e?.name);
  return report.namespaces.map((n) => [n.netns, n.report?.destroyed, name(n.error), n.skipped ?? false]);
}

describeAsRoot("BackendTerminator faults", () => {
  let scene: Scene;
  let clients: SceneClients | undefined;
  const home = threadNetnsInode();
  let a: string;
  let b: string;
  let c: string;

  before(async () => {
    scene = await Scene.start("fault");
    [a, b, c] = scene.pinnedNames as [string, string, string];
  });
  after(async () => {
    await scene?.stop();
  });
  afterEach(async () => {
    await scene.closeClients(clients);
    clients = undefined;
    for (const name of scene.pinnedNames) if (!scene.isPinned(name)) scene.repin(name);
    assert.equal(threadNetnsInode(), home, "the caller's thread must stay in its own namespace");
  });

  const open = async () => {
    clients = await scene.openClients();
    return clients;
  };
  const backendA = () => ({ address: "127.0.0.1", port: scene.portA });
  const hitA = (only: (node: string) => boolean) => (node: string, kind: string) =>
    only(node) && (kind === "a4" || kind === "a4m");

  test("a namespace unpinned while the terminator iterates is reported; the others are terminated", async () => {
    const c0 = await open();
    const source = sourceWith(scene.dir, (entry) => {
      if (entry.name === a) scene.unpin(b); // the directory is listed already; `b` is not opened yet
      return entry;
    });
    const report = new BackendTerminator(
      { onePass: "off" },
      { targets: targetsFrom(() => source) },
    ).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node !== b),
    );
    assert.deepEqual(outcomes(report), [
      [HOST, 3, undefined, false],
      [a, 3, undefined, false],
      [c, 3, undefined, false],
    ]);
    assert.deepEqual(report.failures, []);
    assert.deepEqual(
      report.notes.map((n) => [n.netns, n.skipped]),
      [[b, "vanished"]],
    );
    assert.match(report.notes[0]?.message ?? "", new RegExp(b));
    assert.deepEqual(report.total, {
      matched: 9,
      destroyed: 9,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.equal(report.ok, true); // a namespace gone with its sockets is reported, not a failure
  });

  test("an open entry unpinned before its visit is still terminated; a closed handle is that namespace's error", async () => {
    const c0 = await open();
    const source = sourceWith(scene.dir, (entry) => {
      if (entry.name === a) scene.unpin(a); // the handle is open: the namespace is still reachable
      if (entry.name === c) entry.netns.close(); // lent handle closed before the terminator uses it
      return entry;
    });
    const report = new BackendTerminator({}, { targets: targetsFrom(() => source) }).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node !== c),
    );
    assert.deepEqual(outcomes(report), [
      [HOST, 3, undefined, false],
      [a, 3, undefined, false],
      [b, 3, undefined, false],
      [c, undefined, "NetnsError", false],
    ]);
    assert.match(report.namespaces[3]?.error?.message ?? "", /closed|close\(\)/);
    assert.deepEqual(report.failures, []);
    assert.equal(report.ok, false);
  });

  test("a missing pin directory and a non-namespace entry are source errors; every namespace is terminated", async (t) => {
    const c0 = await open();
    const missing = join(scene.dir, "no-such-dir");
    const plain = join(scene.dir, "zz-plain-file");
    writeFileSync(plain, "not a namespace");
    t.after(() => rmSync(plain, { force: true }));
    const report = new BackendTerminator({ netnsDirs: [missing, scene.dir], discover: false }).terminate(
      backendA(),
    );

    await scene.expect(
      c0,
      hitA(() => true),
    );
    assert.deepEqual(
      report.namespaces.map((n) => n.netns),
      [HOST, a, b, c],
    );
    // The missing directory is a failure; the plain file a note.
    assert.deepEqual(
      report.failures.map((f) => f.error.name),
      ["PinDirectoryNotFoundError"],
    );
    assert.match(report.failures[0]?.error.message ?? "", /no-such-dir/);
    assert.deepEqual(
      report.notes.map((n) => [n.netns, n.skipped]),
      [["zz-plain-file", "plain-file"]],
    );
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 12,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.equal(report.ok, false);
  });

  test("EPERM in one namespace: its sockets are reported failed and skipped, the others terminated", async () => {
    const c0 = await open();
    const k = kernel(b, EPERM);
    const report = new BackendTerminator(
      { netnsDirs: [scene.dir], discover: false },
      { open: k.open },
    ).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node !== b),
    );
    // In b the first destroy is refused, and no other is tried.
    assert.deepEqual([HOST, a, b, c].map(k.destroysIn), [3, 3, 1, 3]);
    assert.deepEqual(outcomes(report), [
      [HOST, 3, undefined, false],
      [a, 3, undefined, false],
      [b, 0, undefined, false],
      [c, 3, undefined, false],
    ]);
    const refused = report.namespaces[2]?.report;
    assert.deepEqual(
      refused?.failed.map((f) => [f.code, "dport" in f.socket && f.socket.dport]),
      [["EPERM", scene.portA]],
    );
    assert.equal(refused?.skipped, 2);
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 9,
      wouldDestroy: 0,
      gone: 0,
      failed: refused?.failed,
      skipped: 2,
    });
    assert.equal(report.unsupported, undefined);
    assert.equal(report.ok, false);
  });

  test("EOPNOTSUPP sets `unsupported`; later namespaces are skipped without a destroy attempt", async () => {
    const c0 = await open();
    const reason = "this kernel cannot destroy sockets (built without CONFIG_INET_DIAG_DESTROY)";
    const k = kernel(a, EOPNOTSUPP);
    const report = new BackendTerminator(
      { netnsDirs: [scene.dir], discover: false },
      { open: k.open },
    ).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node === HOST),
    );
    assert.deepEqual([HOST, a, b, c].map(k.destroysIn), [3, 1, 0, 0]);
    assert.deepEqual(outcomes(report), [
      [HOST, 3, undefined, false],
      [a, 0, undefined, false],
      [b, undefined, undefined, true],
      [c, undefined, undefined, true],
    ]);
    assert.equal(report.unsupported, reason);
    assert.deepEqual(report.total, {
      matched: 6,
      destroyed: 3,
      wouldDestroy: 0,
      gone: 0,
      failed: report.namespaces[1]?.report?.failed,
      skipped: 2,
    });
    assert.equal(report.total.failed.length, 1);
    assert.equal(report.ok, false);
  });

  test("a connection that cannot be opened in one namespace: that namespace's error, the others terminated", async () => {
    const c0 = await open();
    const k = kernel(b, 0, () => {
      throw new RangeError(`boom in ${b}`);
    });
    const warned: unknown[] = [];
    const logger = { info() {}, warn: (_m: string, f?: Record<string, unknown>) => warned.push(f?.netns) };
    const report = new BackendTerminator(
      { netnsDirs: [scene.dir], discover: false, logger },
      { open: k.open },
    ).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node !== b),
    );
    assert.deepEqual(outcomes(report), [
      [HOST, 3, undefined, false],
      [a, 3, undefined, false],
      [b, undefined, "RangeError", false],
      [c, 3, undefined, false],
    ]);
    const error = report.namespaces[2]?.error;
    assert.equal(error?.code, "ERR_SOCKDIAG_FOREIGN");
    assert.ok(error?.cause instanceof RangeError);
    assert.equal((error.cause as Error).message, `boom in ${b}`);
    assert.deepEqual(warned, [b]);
    assert.deepEqual(report.total, {
      matched: 9,
      destroyed: 9,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.equal(report.ok, false);
  });

  test("a source that throws mid-walk: what was visited stays terminated, the exception is a source error", async () => {
    const c0 = await open();
    const source = sourceWith(scene.dir, (entry) => {
      if (entry.name === b) throw new Error(`source broke at ${b}`);
      return entry;
    });
    const report = new BackendTerminator({}, { targets: targetsFrom(() => source) }).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node === HOST || node === a),
    );
    assert.deepEqual(
      report.namespaces.map((n) => n.netns),
      [HOST, a],
    );
    assert.deepEqual(
      report.failures.map((f) => [f.netns, f.error.code, f.error.message]),
      [["(source)", "ERR_SOCKDIAG_FOREIGN", `source broke at ${b}`]],
    );
    assert.equal(report.ok, false);
  });

  test("a source that cannot be made: the host is still terminated", async () => {
    const c0 = await open();
    const namespaces = (): NamespaceSource => {
      throw new Error("no namespaces today");
    };
    const report = new BackendTerminator({}, { targets: targetsFrom(namespaces) }).terminate(backendA());

    await scene.expect(
      c0,
      hitA((node) => node === HOST),
    );
    assert.deepEqual(outcomes(report), [[HOST, 3, undefined, false]]);
    assert.deepEqual(
      report.failures.map((f) => [f.netns, f.error.code, f.error.message]),
      [["(source)", "ERR_SOCKDIAG_FOREIGN", "no namespaces today"]],
    );
    assert.equal(report.ok, false);
  });

  test("a failed return to the caller's namespace is not swallowed: terminate() throws it", async () => {
    const c0 = await open();
    const k = kernel(a, 0, () => {
      throw new NetnsRestoreError("original", a, undefined);
    });
    assert.throws(
      () =>
        new BackendTerminator({ netnsDirs: [scene.dir], discover: false }, { open: k.open }).terminate(
          backendA(),
        ),
      NetnsRestoreError,
    );
    await scene.expect(
      c0,
      hitA((node) => node === HOST),
    );
  });
});
