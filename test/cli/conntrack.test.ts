/**
 * `sockdiag conntrack ls|rm` as a whole process against the real kernel: the table is conntrack -L's,
 * JSON forms, deleting with a dry run and for real, and usage errors (exit 2) that change nothing.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { listConntrack } from "../../src/conntrack/index.js";
import { mixedTable } from "../conntrack/population.js";
import {
  conntrackTool,
  createNetns,
  describeAsRoot,
  insertConntrack,
  type ScratchNetns,
} from "../kit/index.js";
import { sockdiag } from "./cli.js";

/** conntrack -L lines with the seconds left blanked (they tick between two runs), sorted. */
const lines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.includes("src="))
    .map((l) => l.replace(/^(\S+\s+\d+) \d+ /, "$1 T "))
    .sort();

describeAsRoot("sockdiag conntrack", () => {
  let ns: ScratchNetns;
  before(async () => {
    ns = await createNetns("cli-ct");
  });
  after(async () => {
    await ns?.remove();
  });

  test("ls prints what conntrack -L prints, selection for selection", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    for (const [ours, theirs] of [
      [[], []],
      [
        ["-p", "tcp"],
        ["-p", "tcp"],
      ],
      [["-6"], ["-f", "ipv6"]],
      [
        ["-p", "udp", "--reply-src", "10.61.244.3:5353"],
        ["-p", "udp", "--reply-src", "10.61.244.3", "--reply-port-src", "5353"],
      ],
      [
        ["--reply-src", "fd61::a1"],
        ["-f", "ipv6", "--reply-src", "fd61::a1"],
      ],
      [
        ["-p", "udp", "--orig-dst", "[fd61::53]:53"],
        ["-f", "ipv6", "-p", "udp", "--orig-dst", "fd61::53", "--dport", "53"],
      ],
      [
        ["--mark", "7"],
        ["-m", "7"],
      ],
    ]) {
      const r = await sockdiag(["conntrack", "ls", "-N", ns.name, ...ours!]);
      assert.equal(r.code, 0, r.stderr);
      const oracle = lines((await conntrackTool(ns.name, ["-L", ...theirs!])).stdout);
      assert.ok(oracle.length > 0);
      assert.deepEqual(lines(r.stdout), oracle, `ls ${ours!.join(" ")}`);
    }
  });

  test("-j is one array, --ndjson one object a line, with the namespace label", async () => {
    const j = await sockdiag(["conntrack", "ls", "-N", ns.name, "-p", "tcp", "-j"]);
    const all = JSON.parse(j.stdout);
    assert.equal(all.length, 10);
    assert.ok(
      all.every((e: { netns: string; state: string }) => e.netns === ns.name && e.state === "ESTABLISHED"),
    );
    const nd = await sockdiag(["conntrack", "ls", "-N", ns.name, "-p", "tcp", "--ndjson"]);
    assert.deepEqual(
      nd.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).id)
        .sort(),
      all.map((e: { id: number }) => e.id).sort(),
    );
  });

  test("rm --dry-run lists and keeps; rm deletes and reports on stderr", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    const dry = await sockdiag(["conntrack", "rm", "-N", ns.name, "--orig-src", "10.61.1.9", "--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(lines(dry.stdout).length, 10);
    assert.match(dry.stderr, /10 conntrack entries matched, 10 would be deleted \(dry run\)/);
    const dryJson = await sockdiag([
      "conntrack",
      "rm",
      "-N",
      ns.name,
      "--orig-src",
      "10.61.1.9",
      "--dry-run",
      "-j",
    ]);
    const dryReport = JSON.parse(dryJson.stdout).report;
    assert.deepEqual(
      [dryReport.matched, dryReport.deleted, dryReport.wouldDelete, dryReport.gone, dryReport.skipped],
      [10, 0, 10, 0, 0],
      "the dry run's report balances",
    );
    assert.equal(listConntrack({ netns: ns.name }).length, mixedTable().length);
    const r = await sockdiag(["conntrack", "rm", "-N", ns.name, "--orig-src", "10.61.1.9", "-j"]);
    assert.equal(r.code, 0, r.stderr);
    const { entries, report } = JSON.parse(r.stdout);
    assert.equal(entries.length, 10);
    assert.equal(report.deleted, 10);
    assert.deepEqual(
      report.namespaces.map((n: { netns: string }) => n.netns),
      [ns.name],
    );
    assert.equal(listConntrack({ netns: ns.name }).length, mixedTable().length - 10);
  });

  test("usage errors exit 2 and change nothing", async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
    for (const [args, message] of [
      [["rm", "-p", "udp"], /refusing to delete .* without an address, port, zone or mark/],
      [["rm"], /refusing/],
      [["ls", "--orig-src", "10.0.0.300"], /10\.0\.0\.300/],
      [["ls", "--dry-run"], /--dry-run goes with conntrack rm/],
      [["rm", "-p", "quic", "--all"], /quic/],
      [["frob"], /unknown conntrack command "frob"/],
      [[], /conntrack needs ls or rm/],
      [["ls", "-4", "-6"], /choose one family: -4, -6 or -f/],
      [["ls", "-4", "-f", "ipv6"], /choose one family: -4, -6 or -f/],
      [["ls", "-f", "inet7"], /-f\/--family: "inet7" is not ipv4 or ipv6/],
      [["-L", "-D"], /choose one of -L, -D/],
      [["ls", "--mark", "x"], /--mark: "x" is not a number/],
      // A zero mask with mark 0 selects every entry: as no selection at all.
      [["rm", "--mark", "0/0"], /refusing to delete/],
      [["rm", "-p", "udp", "--mark", "0/0x0"], /refusing to delete/],
    ] as const) {
      const r = await sockdiag(["conntrack", ...args, "-N", ns.name]);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
    const missing = await sockdiag(["conntrack", "ls", "-N", "sdt-no-such-namespace"]);
    assert.equal(missing.code, 2);
    assert.equal(listConntrack({ netns: ns.name }).length, mixedTable().length);
    const all = await sockdiag(["conntrack", "rm", "-N", ns.name, "-p", "tcp", "--all"]);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(listConntrack({ netns: ns.name, protocol: "tcp" }).length, 0);
  });

  test("--all-netns adds a namespace column", async () => {
    const r = await sockdiag(["conntrack", "ls", "--all-netns", "--orig-src", "10.61.1.8"]);
    assert.equal(r.code, 0, r.stderr);
    // Other runs of this suite may hold the same table in their own namespaces: count ours.
    const rows = r.stdout.trimEnd().split("\n");
    assert.equal(rows.filter((l) => l.startsWith(`${ns.name} `)).length, 5);
    assert.ok(
      rows.every((l) => /^\S+\s+udp\s+17 /.test(l)),
      "every row starts with its namespace",
    );
  });
});
