/**
 * `sockdiag terminate-backend` as a user runs it (a child process), in the scene of the terminator
 * tests: the host and three namespaces pinned in a test-owned directory given with --netns-dir.
 * JSON and text reports, --dry-run, --host-only, exit 1 on a failure, exit 2 on bad input with
 * nothing destroyed.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, afterEach, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { describeAsRoot } from "../kit/root.js";
import { HOST, Scene, type SceneClients, threadNetnsInode } from "../terminator/scene.js";

const CLI = fileURLToPath(new URL("../../../src/cli/bin.cjs", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** sockdiag runs the CLI with `args` and resolves with its exit code and output (never rejects on exit status). */
function sockdiag(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args], (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== "number") reject(err);
      else resolve({ code, stdout, stderr });
    });
  });
}

type Counts = {
  matched: number;
  destroyed: number;
  wouldDestroy: number;
  gone: number;
  failed: unknown[];
  skipped: number;
};

/** The JSON report: the library's BatchTerminationReport with each namespace's report in JSON form. */
interface JsonReport {
  backends: { backend: { address: string; port: number; protocol: string }; total: Counts }[];
  namespaces: {
    netns: string;
    backends: Counts[];
    report?: {
      matched: number;
      destroyed: number;
      wouldDestroy: number;
      gone: number;
      failed: unknown[];
      dryRun: boolean;
    };
    error?: unknown;
  }[];
  total: Counts;
  onePass?: { mode: string; used: boolean };
  failures: { netns: string; error: { name: string; code: string; message: string } }[];
  ok: boolean;
}

function json(run: Run): JsonReport {
  assert.equal(run.stderr, "", "no error output");
  return JSON.parse(run.stdout) as JsonReport;
}

describeAsRoot("sockdiag terminate-backend", () => {
  let scene: Scene;
  let clients: SceneClients | undefined;
  const home = threadNetnsInode();

  before(async () => {
    scene = await Scene.start("cli");
  });
  after(async () => {
    await scene?.stop();
  });
  afterEach(async () => {
    await scene.closeClients(clients);
    clients = undefined;
    assert.equal(threadNetnsInode(), home);
  });

  const open = async () => {
    clients = await scene.openClients();
    return clients;
  };
  const backendA = () => `127.0.0.1:${scene.portA}`;
  const perNamespace = (r: JsonReport) =>
    r.namespaces.map((n) => [n.netns, n.report?.matched, n.report?.destroyed, n.report?.failed.length]);

  test("-j prints a JSON report per namespace with totals and exits 0", async () => {
    const c = await open();
    const run = await sockdiag(
      "terminate-backend",
      backendA(),
      "--netns-dir",
      scene.dir,
      "--no-discover",
      "-j",
    );

    assert.equal(run.code, 0);
    const report = json(run);
    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    assert.deepEqual(
      report.backends.map((b) => b.backend),
      [{ address: "127.0.0.1", port: scene.portA, protocol: "udp" }],
    );
    assert.deepEqual(
      perNamespace(report),
      [HOST, ...scene.pinnedNames].map((name) => [name, 3, 3, 0]),
    );
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 12,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(report.failures, []);
    assert.equal(report.ok, true);
    // --one-pass auto, the default: the sockets were found by the one pass.
    assert.deepEqual([report.onePass?.mode, report.onePass?.used], ["auto", true]);
  });

  test("without a namespace option every namespace is visited, one that no pin holds too", async () => {
    const c = await open();
    const unpinned = scene.pinnedNames[0]!;
    scene.unpin(unpinned);
    let run: Run;
    try {
      run = await sockdiag("terminate-backend", backendA(), "--no-conntrack", "-j");
    } finally {
      scene.repin(unpinned);
    }

    assert.equal(run.code, 0, run.stderr);
    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    const report = json(run);
    const hit = report.namespaces.filter((n) => (n.report?.matched ?? 0) > 0);
    assert.equal(hit.length, 4, "the host and the scene's three namespaces");
    assert.ok(hit.some((n) => n.netns === `pid:${scene.node(unpinned).holder.pid}`));
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 12,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
  });

  test("the text report of an IPv6 backend names it in brackets and counts per namespace", async () => {
    const c = await open();
    const run = await sockdiag(
      "terminate-backend",
      `[::1]:${scene.portB}`,
      "--netns-dir",
      scene.dir,
      "--no-discover",
    );

    assert.equal(run.code, 0, run.stderr);
    await scene.expect(c, (_node, kind) => kind === "b6");
    const lines = run.stdout.trimEnd().split("\n");
    assert.equal(lines[0], `backend [::1]:${scene.portB} (udp)`);
    for (const name of [HOST, ...scene.pinnedNames])
      assert.ok(
        lines.some((l) => l.trim().startsWith(name) && /matched 1\s+destroyed 1\s+gone 0\s+failed 0/.test(l)),
        `a line for ${name} in:\n${run.stdout}`,
      );
    assert.equal(lines.at(-1), "total: 4 matched, 4 destroyed, 0 already gone, 0 failed in 4 namespaces");
  });

  test("several backends in one run, reported per backend and per namespace", async () => {
    const c = await open();
    const run = await sockdiag(
      "terminate-backend",
      backendA(),
      `[::1]:${scene.portB}`,
      "--netns-dir",
      scene.dir,
      "--no-discover",
      "-j",
    );

    assert.equal(run.code, 0);
    const report = json(run);
    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m" || kind === "b6");
    const counts = (n: number): Counts => ({
      matched: n,
      destroyed: n,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(
      report.backends.map((b) => [b.backend.address, b.total]),
      [
        ["127.0.0.1", counts(12)],
        ["::1", counts(4)],
      ],
    );
    assert.deepEqual(
      report.namespaces.map((n) => [n.netns, n.backends]),
      [HOST, ...scene.pinnedNames].map((name) => [name, [counts(3), counts(1)]]),
    );
    assert.deepEqual(report.total, counts(16));
  });

  test("-N NAME and --netns PATH visit only that namespace", async () => {
    const c = await open();
    const [first, second] = scene.pinnedNames as [string, string];
    const byPath = await sockdiag("terminate-backend", backendA(), "--netns", scene.pinPath(second), "-j");
    assert.equal(byPath.code, 0);
    assert.deepEqual(perNamespace(json(byPath)), [[scene.pinPath(second), 3, 3, 0]]);
    await scene.expect(c, (node, kind) => node === second && (kind === "a4" || kind === "a4m"));
    const text = await sockdiag(
      "terminate-backend",
      backendA(),
      "--netns",
      scene.pinPath(first),
      "--dry-run",
    );
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^backend 127\.0\.0\.1:\d+ \(udp\) — dry run$/m);
    assert.match(
      text.stdout,
      /total: 3 matched, 3 would be destroyed, .* in 1 namespace\ndry run: nothing was destroyed and no conntrack entry deleted\n$/,
    );
    assert.match(text.stdout, / matched 3 {2}would destroy 3\n/);
  });

  test("--dry-run counts and destroys nothing", async () => {
    const c = await open();
    const run = await sockdiag(
      "terminate-backend",
      backendA(),
      "--netns-dir",
      scene.dir,
      "--no-discover",
      "--dry-run",
      "-j",
    );

    assert.equal(run.code, 0);
    const report = json(run);
    await scene.expect(c, () => false);
    assert.deepEqual(report.total, {
      matched: 12,
      destroyed: 0,
      wouldDestroy: 12,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.ok(report.namespaces.every((n) => n.report?.dryRun === true));
    for (const n of report.namespaces) {
      const r = n.report!;
      assert.deepEqual([r.matched, r.destroyed, r.wouldDestroy], [3, 0, 3], n.netns);
    }
  });

  test("--host-only visits only the host", async () => {
    const c = await open();
    const run = await sockdiag("terminate-backend", backendA(), "--host-only", "--protocol", "any", "-j");

    assert.equal(run.code, 0);
    const report = json(run);
    await scene.expect(c, (node, kind) => node === HOST && (kind === "a4" || kind === "a4m"));
    assert.equal(report.backends[0]?.backend.protocol, "any");
    assert.deepEqual(perNamespace(report), [[HOST, 3, 3, 0]]);
  });

  test("exits 1 when a namespace directory cannot be read, after terminating all it could", async () => {
    const c = await open();
    const missing = join(scene.dir, "missing");
    const run = await sockdiag(
      "terminate-backend",
      backendA(),
      "--netns-dir",
      missing,
      "--netns-dir",
      scene.dir,
      "--no-discover",
      "-j",
    );

    assert.equal(run.code, 1);
    const report = json(run);
    await scene.expect(c, (_node, kind) => kind === "a4" || kind === "a4m");
    assert.equal(report.ok, false);
    assert.equal(report.total.destroyed, 12);
    assert.equal(report.failures.length, 1);
    assert.match(report.failures[0]?.error.message ?? "", new RegExp(missing));
    assert.equal(report.failures[0]?.error.code, "ERR_SOCKDIAG_PIN_DIRECTORY_NOT_FOUND");
  });

  test("bad input exits 2 naming the problem and destroys nothing", async () => {
    const c = await open();
    const a = scene.portA;
    const cases: [string[], RegExp][] = [
      [["300.1.1.1:53"], /invalid backend "300\.1\.1\.1:53": "300\.1\.1\.1" is not an IPv4 or IPv6 address/],
      [["10.0.0.1"], /invalid backend "10\.0\.0\.1": a port is missing/],
      [["10.0.0.1:99999"], /invalid backend "10\.0\.0\.1:99999": port 99999 is out of range/],
      [["127.0.0.1:0"], /invalid backend "127\.0\.0\.1:0": port 0 is out of range/],
      [[`127.0.0.1:${a}`, "--protocol", "foo"], /invalid protocol "foo": expected udp, tcp or any/],
      [[`127.0.0.1:${a}`, "127.0.0.1:0"], /invalid backend "127\.0\.0\.1:0"/],
      [[`127.0.0.1:${a}`, "-N", "sdt-no-such-netns"], /netns "sdt-no-such-netns": cannot open/],
      [[`127.0.0.1:${a}`, "--pid", "999999999"], /--pid 999999999: no such process/],
      [[`127.0.0.1:${a}`, "-N", "x", "--all-netns"], /choose one of --net, --all-netns/],
      [[`127.0.0.1:${a}`, "-N", "x", "--netns-dir", "/tmp"], /--netns-dir goes with --all-netns/],
      [[`127.0.0.1:${a}`, "--pid", "1", "--no-discover"], /--no-discover goes with --all-netns/],
      [[`127.0.0.1:${a}`, "-N", "x", "--host-only"], /choose one of --net, --host-only/],
      [[`[127.0.0.1]:${a}`], /brackets are for IPv6 addresses only/],
      [[`127.0.0.1:${a}`, "--bogus"], /unknown option '--bogus'/],
      [[], /terminate-backend needs a backend IP:PORT/],
    ];
    for (const [args, message] of cases) {
      const namespaced = args.some((a) => a === "-N" || a === "--pid");
      const run = await sockdiag(
        "terminate-backend",
        ...args,
        ...(namespaced ? [] : ["--netns-dir", scene.dir, "--no-discover"]),
      );
      assert.equal(run.code, 2, `exit status for ${args.join(" ")}`);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, "", `nothing printed for ${args.join(" ")}`);
    }
    await scene.expect(c, () => false);
  });
});
