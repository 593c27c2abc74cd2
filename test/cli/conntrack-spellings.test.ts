/**
 * `sockdiag conntrack` takes conntrack-tools' spellings (conntrack(8)): each one is run through
 * sockdiag and through `conntrack` itself on one table, in a namespace the test creates, and must
 * select the same entries — with -L as with -D. Where conntrack needs more (-p for a port, -f
 * ipv6 for the other family: it lists IPv4 only without -f), the oracle is given it, once per
 * family where sockdiag lists both.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
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

const BOTH = [
  ["-f", "ipv4"],
  ["-f", "ipv6"],
];
/** Each family, with `args`: what sockdiag selects without -f. */
const inBoth = (...args: string[]) => BOTH.map((f) => [...f, ...args]);

/** A sockdiag spelling, and the conntrack runs whose entries together are what it selects. */
const LISTED: [string[], string[][]][] = [
  [[], inBoth()],
  [["-p", "tcp"], [["-p", "tcp"]]],
  [["--proto", "tcp"], [["-p", "tcp"]]],
  [["-f", "ipv6"], [["-f", "ipv6"]]],
  [["-f", "ipv4"], [["-f", "ipv4"]]],
  [["-s", "10.61.1.2"], [["-s", "10.61.1.2"]]],
  [["--src", "10.61.1.2"], [["--src", "10.61.1.2"]]],
  [["--orig-src", "10.61.1.2"], [["--orig-src", "10.61.1.2"]]],
  [["-d", "10.61.96.1"], [["-d", "10.61.96.1"]]],
  [["--dst", "10.61.96.1"], [["--dst", "10.61.96.1"]]],
  [["-r", "10.61.244.3"], [["-r", "10.61.244.3"]]],
  [["-q", "fd61::1"], [["-f", "ipv6", "-q", "fd61::1"]]],
  [["-p", "udp", "--sport", "20001"], [["-p", "udp", "--sport", "20001"]]],
  [["--dport", "53"], inBoth("-p", "udp", "--dport", "53")],
  [["--orig-port-dst", "9"], [["-p", "udp", "--orig-port-dst", "9"]]],
  [["--orig-dst", ":53"], inBoth("-p", "udp", "--dport", "53")],
  [["--reply-port-src", "5353"], [["-p", "udp", "--reply-port-src", "5353"]]],
  [["--reply-port-dst", "20003"], [["-p", "udp", "--reply-port-dst", "20003"]]],
  [
    ["-r", "10.61.244.3", "--reply-port-src", "5353"],
    [["-p", "udp", "-r", "10.61.244.3", "--reply-port-src", "5353"]],
  ],
  [["-m", "7"], [["-m", "7"]]],
  [["--mark", "6/6"], [["--mark", "6/6"]]],
  [["-w", "0", "-p", "tcp"], [["-w", "0", "-p", "tcp"]]],
  [["--zone", "0", "-p", "tcp"], [["--zone", "0", "-p", "tcp"]]],
];

/** Deletions: sockdiag's -D spelling, and conntrack's -D runs that delete the same entries. */
const DELETED: [string[], string[][]][] = [
  [["-s", "10.61.1.2"], [["-s", "10.61.1.2"]]],
  [["--dport", "9"], [["-p", "udp", "--dport", "9"]]],
  [
    ["-r", "10.61.244.3", "--reply-port-src", "5353"],
    [["-p", "udp", "-r", "10.61.244.3", "--reply-port-src", "5353"]],
  ],
  [["-m", "7"], [["-m", "7"]]],
  [["-f", "ipv6", "--dport", "53"], [["-f", "ipv6", "-p", "udp", "--dport", "53"]]],
];

describeAsRoot("sockdiag conntrack with conntrack(8)'s spellings", () => {
  let ns: ScratchNetns;
  const fresh = async () => {
    await conntrackTool(ns.name, ["-F"]);
    insertConntrack(ns.path, mixedTable());
  };
  const oracle = async (action: string, runs: string[][]) => {
    const out: string[] = [];
    for (const args of runs) out.push(...lines((await conntrackTool(ns.name, [action, ...args])).stdout));
    return out.sort();
  };
  const remaining = () => oracle("-L", inBoth());

  before(async () => {
    ns = await createNetns("ct-spell");
  });
  after(async () => {
    await ns?.remove();
  });

  test("-L: each spelling selects what conntrack -L selects", async () => {
    await fresh();
    for (const [ours, theirs] of LISTED) {
      const r = await sockdiag(["conntrack", "-L", ...ours, "-N", ns.name]);
      assert.equal(r.code, 0, `${ours.join(" ")}: ${r.stderr}`);
      const expected = await oracle("-L", theirs);
      assert.ok(expected.length > 0, `conntrack ${theirs.join(" ")} selects something`);
      assert.deepEqual(lines(r.stdout), expected, `sockdiag conntrack ${ours.join(" ")}`);
    }
  });

  test("-D: each spelling deletes what conntrack -D deletes", async () => {
    for (const [ours, theirs] of DELETED) {
      await fresh();
      const r = await sockdiag(["conntrack", "-D", ...ours, "-N", ns.name]);
      assert.equal(r.code, 0, `${ours.join(" ")}: ${r.stderr}`);
      const afterOurs = await remaining();
      await fresh();
      const before = await remaining();
      for (const args of theirs) await conntrackTool(ns.name, ["-D", ...args]);
      const afterTheirs = await remaining();
      assert.ok(afterTheirs.length < before.length, `conntrack -D ${theirs.join(" ")} deletes something`);
      assert.deepEqual(afterOurs, afterTheirs, `sockdiag conntrack -D ${ours.join(" ")}`);
    }
  });

  test("refusals: an empty -D says what to add; an unknown option names the nearest", async () => {
    const empty = await sockdiag(["conntrack", "-D", "-N", ns.name]);
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /add an address \(-s, -d, -r, -q\), a port \(--sport, --dport/);
    assert.doesNotMatch(empty.stderr, /--mark 0\/0/);
    const typo = await sockdiag(["conntrack", "-L", "--reply-port-sr", "53", "-N", ns.name]);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /unknown option '--reply-port-sr'; did you mean --reply-port-src\?/);
    const both = await sockdiag([
      "conntrack",
      "-L",
      "--src",
      "10.61.1.2",
      "--orig-src",
      "10.61.1.3",
      "-N",
      ns.name,
    ]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--orig-src and --src name the same field/);
  });
});
