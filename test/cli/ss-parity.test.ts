/**
 * ss parity and the rough edges of the command line: --version, help CMD, netns list / bare netns,
 * a repeated -N, -o timers against ss -o, -s counts against the listing, ls -K against kill's
 * rules, and the one name of the caller's own namespace.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { describeAsRoot, runSs } from "../kit/index.js";
import { kernelLacks, useScene } from "../sockets/list-scene.js";
import { type JsonSocket, sockdiag, sockdiagJson } from "./cli.js";

const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

describe("sockdiag --version, help and netns without a subcommand", () => {
  test("--version and -V print the package version", async () => {
    for (const flag of ["--version", "-V"]) {
      const r = await sockdiag([flag]);
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, `sockdiag ${pkg.version}\n`, ""]);
    }
  });

  test("help CMD prints what CMD --help prints; an unknown one is a usage error", async () => {
    for (const name of ["ls", "kill", "terminate-backend", "netns", "doctor"]) {
      const [viaHelp, viaFlag] = await Promise.all([sockdiag(["help", name]), sockdiag([name, "--help"])]);
      assert.equal(viaHelp.code, 0);
      assert.match(viaHelp.stdout, new RegExp(`^Usage: sockdiag ${name} `));
      assert.equal(viaHelp.stdout, viaFlag.stdout);
    }
    const bad = await sockdiag(["help", "frobnicate"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown command "frobnicate"/);
  });

  test("--help lists every command; ls --help names the default protocols", async () => {
    const main = await sockdiag(["--help"]);
    for (const name of ["ls", "kill", "terminate-backend", "netns", "doctor"])
      assert.match(main.stdout, new RegExp(`^  ${name} `, "m"));
    const ls = await sockdiag(["ls", "--help"]);
    assert.match(
      ls.stdout,
      /Protocols without -t\/-u\/-w\/-x\/-M\/-S\/-0\/-A\/-f...: tcp, udp, raw, sctp, mptcp, unix, packet, netlink, vsock, xdp/,
    );
  });

  test("bare `netns` prints its help and exits 2; a repeated -N is a usage error", async () => {
    const bare = await sockdiag(["netns"]);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /^Usage: sockdiag netns ls\|list/);
    const twice = await sockdiag(["ls", "-N", "a", "-N", "b"]);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /-N\/--net given more than once/);
    assert.match(twice.stderr, /--all-netns/);
  });
});

describeAsRoot("ss parity in a namespace of every kind of socket", () => {
  const live = useScene({ label: "parity", mptcp: false });

  test("netns list is netns ls; the caller's own namespace is (host) there and in ls -j", async () => {
    const [ls, list] = await Promise.all([
      sockdiag(["netns", "ls", "-j"]),
      sockdiag(["netns", "list", "-j"]),
    ]);
    const names = (r: { stdout: string }) =>
      (JSON.parse(r.stdout) as { name: string | null }[]).map((x) => x.name);
    // Other tests create namespaces meanwhile: compare the rows this test knows.
    for (const r of [ls, list]) {
      assert.equal(r.code, 0, r.stderr);
      assert.ok(names(r).includes(live.ns));
      assert.equal(names(r).filter((n) => n === "(host)").length, 1);
    }
    const own = await sockdiagJson(["ls", "-x", "-a"]);
    assert.ok(
      own.length > 0 && own.every((s) => s.netns === "(host)"),
      "ls -j names the caller's own (host)",
    );
  });

  test("-o prints a timer exactly where ss -o does, with the same name and retransmits", async () => {
    const [listener] = live.scene.held.filter((h) => h.protocol === "tcp" && h.state === "listening");
    assert.ok(listener, "the scene has a TCP listener");
    const [client] = await live.scene.holder.open({ kind: "connection", listener: listener.id });
    await live.scene.holder.close([client!.id]); // the client closes first: FIN-WAIT-2, a running timer
    // Keyed by socket cookie (sk: with -e): the orphaned FIN-WAIT-2 socket has no inode.
    const timers = (text: string) =>
      new Map(
        text
          .split("\n")
          .filter((l) => l.includes(" sk:"))
          .map((l) => {
            const timer = /timer:\(([a-z]+),[^,]*,(\d+)\)/.exec(l);
            return [/ sk:([0-9a-f]+)/.exec(l)![1]!, timer ? `${timer[1]} ${timer[2]}` : "none"] as const;
          }),
      );
    const ours = await sockdiag(["ls", "-N", live.ns, "-t", "-a", "-o", "-e", "-H"]);
    assert.equal(ours.code, 0, ours.stderr);
    const mine = timers(ours.stdout);
    assert.deepEqual(mine, timers(await runSs(["-t", "-a", "-n", "-o", "-e", "-H"], live.ns)));
    assert.ok(
      [...mine.values()].some((t) => t !== "none"),
      `some socket has a timer:\n${ours.stdout}`,
    );
    const json = await sockdiagJson(["ls", "-N", live.ns, "-t", "-a", "-o"]);
    for (const s of json as (JsonSocket & { timer?: { name: string; retrans: number } })[]) {
      const text = mine.get(BigInt(s.cookie).toString(16));
      assert.equal(`${s.timer?.name} ${s.timer?.retrans}`, text === "none" ? "off 0" : text);
    }
  });

  test("ls -a lists what the kernel can list; --verbose notes each protocol it cannot (sctp here)", async () => {
    const quiet = await sockdiag(["ls", "-N", live.ns, "-a", "-H"]);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.ok(quiet.stdout.length > 0);
    assert.equal(quiet.stderr, "", "no note unless asked");
    const r = await sockdiag(["ls", "-N", live.ns, "-a", "-H", "--verbose"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr.includes("note: sctp not listed"), kernelLacks("sctp"), r.stderr);
    // Without raw_diag, raw sockets come from /proc/net/raw, as ss lists them: never a note.
    assert.ok(!r.stderr.includes("note: raw not listed"), r.stderr);
    const plain = await sockdiag(["ls", "-N", live.ns, "-H"]);
    assert.equal(plain.stderr, "", "without -a, no note");
  });

  test("ls -K destroys what kill destroys and refuses an empty filter, as kill does", async () => {
    const refused = await sockdiag(["ls", "-N", live.ns, "-u", "-K"]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /refusing to destroy every selected socket without a filter/);
    const udp = live.scene.listed.filter((h) => h.protocol === "udp" && h.state === "established");
    const target = udp[0];
    assert.ok(target, "the scene has a connected UDP socket");
    const before = await sockdiagJson(["ls", "-N", live.ns, "-u", "-a"]);
    const r = await sockdiag(["ls", "-N", live.ns, "-u", "-K", "-H", "dst", `${target.dst}:${target.dport}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /matched, \d+ destroyed/);
    const after = await sockdiagJson(["ls", "-N", live.ns, "-u", "-a"]);
    const gone = before.filter((s) => !after.some((a) => a.cookie === s.cookie));
    assert.ok(gone.length >= 1);
    // An IPv4 address also names IPv6 sockets connected to its v4-mapped form (ss semantics).
    const to = (s: JsonSocket) => `${s.dst?.replace(/^::ffff:(?=\d+\.)/, "")}:${s.dport}`;
    assert.deepEqual(
      new Set(gone.map(to)),
      new Set([`${target.dst.replace(/^::ffff:/, "")}:${target.dport}`]),
    );
    assert.equal(r.stdout.trimEnd().split("\n").length, gone.length, "one line per destroyed socket");
  });
});
