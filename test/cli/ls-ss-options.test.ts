/**
 * ss's display options against ss itself: -O against the second line -m and -i get, --cgroup in a
 * cgroup made for the test, -T's thread owners, -H rows; and the options refused with a reason,
 * and an unknown option that names the nearest known one.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, rmdirSync, writeFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { cgroup2Mount } from "../../src/cli/select/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Holder,
  runSs,
  type ScratchNetns,
} from "../kit/index.js";
import { useScene } from "../sockets/list-scene.js";
import { sockdiag } from "./cli.js";

/** The lines of a listing, grouped by socket: the socket's line and its continuation lines (a tab first). */
function socketsOf(text: string): string[][] {
  const sockets: string[][] = [];
  for (const line of text.split("\n").filter((l) => l !== ""))
    if (line.startsWith("\t")) sockets.at(-1)!.push(line);
    else sockets.push([line]);
  return sockets;
}

/** A socket's `sk:` cookie and what `pick` finds in its lines, for every socket of a listing. */
function bySocket(text: string, pick: (lines: string[]) => string): Map<string, string> {
  return new Map(socketsOf(text).map((lines) => [/ sk:([0-9a-f]+)/.exec(lines[0]!)![1]!, pick(lines)]));
}

describe("options sockdiag refuses, and unknown ones", () => {
  test("-r, -Z and -z are usage errors that name the option and say why", async () => {
    for (const [flag, why] of [
      ["-r", /^sockdiag: -r\/--resolve: output is numeric only: resolving names would send a DNS query/],
      ["--context", /^sockdiag: -Z\/--context: this kernel has no SELinux security contexts to show/],
      ["-z", /^sockdiag: -z\/--contexts: this kernel has no SELinux security contexts to show/],
    ] as const) {
      for (const command of ["ls", "kill"]) {
        const r = await sockdiag([command, "-t", flag]);
        assert.deepEqual([r.code, r.stdout], [2, ""], `${command} ${flag}`);
        assert.match(r.stderr, why);
      }
    }
  });

  test("an unknown option names the nearest known one, long by spelling, short by case", async () => {
    for (const [args, near] of [
      [["ls", "--cgrup"], "--cgroup"],
      [["ls", "--oneline2"], "--oneline"],
      [["ls", "--listen"], "--listening"],
      [["kill", "--dry-rn"], "--dry-run"],
      [["ls", "-L"], "-l/--listening"],
    ] as const) {
      const r = await sockdiag(args);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        new RegExp(`unknown option '${args[1]}'; did you mean ${near}\\?`),
        args.join(" "),
      );
    }
    const far = await sockdiag(["ls", "--frobnicate"]);
    assert.equal(far.code, 2);
    assert.match(far.stderr, /unknown option '--frobnicate'\n/);
  });
});

describeAsRoot("ss's display options, against ss", () => {
  const live = useScene({ label: "ls-opts", mptcp: false });

  test("-m and -i go on a second line, as ss prints them; with -O on the socket's line", async () => {
    for (const oneline of [[], ["-O"]]) {
      const args = ["-t", "-a", "-e", "-m", "-i", "-H", ...oneline];
      const ours = await sockdiag(["ls", "-N", live.ns, ...args]);
      assert.equal(ours.code, 0, ours.stderr);
      const theirs = await runSs(["-n", ...args], live.ns);
      // Per socket: how many lines, and which of them holds skmem.
      const shape = (lines: string[]) => `${lines.length} ${lines.findIndex((l) => l.includes("skmem:("))}`;
      const mine = bySocket(ours.stdout, shape);
      assert.deepEqual(mine, bySocket(theirs, shape), `ss:\n${theirs}\nsockdiag:\n${ours.stdout}`);
      assert.ok(mine.size > 0);
      assert.ok([...mine.values()].every((s) => s === (oneline.length > 0 ? "1 0" : "2 1")));
    }
  });

  test("-T names every thread holding a socket as ss -T does, with pid and tid", async () => {
    const args = ["-t", "-u", "-a", "-e", "-T", "-H"];
    const ours = await sockdiag(["ls", "-N", live.ns, ...args]);
    assert.equal(ours.code, 0, ours.stderr);
    const users = (lines: string[]) =>
      [...lines[0]!.matchAll(/\("[^"]*",pid=\d+,tid=\d+,fd=\d+\)/g)]
        .map((m) => m[0])
        .sort()
        .join(" ");
    const mine = bySocket(ours.stdout, users);
    assert.deepEqual(mine, bySocket(await runSs(["-n", ...args], live.ns), users));
    const pid = live.scene.holder.pid;
    assert.ok(
      [...mine.values()].every((u) => u.includes(`pid=${pid},tid=${pid},`)),
      `the holder's main thread holds every socket:\n${ours.stdout}`,
    );
  });

  test("-H leaves out the header line and nothing else: the rows keep their columns", async () => {
    // Not netlink: each run lists its own sock_diag socket, whose port id differs.
    for (const flags of [
      ["-a", "-A", "all,!netlink"],
      ["-a", "-e", "-tux0"],
      ["-t", "-u", "-a", "-m"],
    ]) {
      const withHeader = await sockdiag(["ls", "-N", live.ns, ...flags]);
      const without = await sockdiag(["ls", "-N", live.ns, ...flags, "-H"]);
      assert.equal(without.code, 0, without.stderr);
      const [header, ...rows] = withHeader.stdout.split("\n");
      assert.match(header!, /^Netid +State/);
      assert.equal(without.stdout, rows.join("\n"), flags.join(" "));
    }
  });
});

describeAsRoot("--cgroup names the socket's cgroup as ss does", () => {
  const mount = cgroup2Mount();
  const name = `sockdiag-test-${process.pid}`;
  let ns: ScratchNetns;
  let holder: Holder | undefined;

  before(async () => {
    await cleanupLeftovers();
    assert.ok(mount, "a cgroup2 file system is mounted");
    // A crashed run's cgroup: rmdir fails while a process is still in it, and that one is left.
    for (const e of readdirSync(mount).filter((n) => n.startsWith("sockdiag-test-")))
      try {
        rmdirSync(`${mount}/${e}`);
      } catch {}
    ns = await createNetns("cgroup");
    mkdirSync(`${mount}/${name}`);
    holder = await Holder.start({ netnsPath: ns.path });
    // A socket belongs to the cgroup of the process that made it, when it was made.
    writeFileSync(`${mount}/${name}/cgroup.procs`, String(holder.pid));
    const [listener] = await holder.open({ kind: "listener", bind: { address: "127.0.0.1", port: 0 } });
    await holder.open({ kind: "connection", listener: listener!.id });
    await holder.open({ kind: "udp", bind: { address: "127.0.0.1", port: 0 } });
  });
  after(async () => {
    try {
      await holder?.stop();
    } finally {
      try {
        rmdirSync(`${mount}/${name}`);
      } finally {
        await ns?.remove();
      }
    }
  });

  test("in the table, for --cgroup and -e, the path ss prints", async () => {
    const cgroup = (lines: string[]) => / cgroup:(\S+)/.exec(lines[0]!)?.[1] ?? "none";
    for (const flags of [["--cgroup", "-e"], ["-e"]]) {
      const args = ["-t", "-u", "-a", "-H", ...flags];
      const ours = await sockdiag(["ls", "-N", ns.name, ...args]);
      assert.equal(ours.code, 0, ours.stderr);
      const mine = bySocket(ours.stdout, cgroup);
      assert.deepEqual(mine, bySocket(await runSs(["-n", ...args], ns.name, true), cgroup));
      assert.deepEqual([...new Set(mine.values())], [`/${name}`], ours.stdout);
      assert.equal(mine.size, 4, "listener, both ends of the connection, the UDP socket");
    }
    const json = await sockdiag(["ls", "-N", ns.name, "-t", "-u", "-a", "--cgroup", "-j"]);
    const ids = (JSON.parse(json.stdout) as { cgroupId?: string }[]).map((s) => s.cgroupId);
    assert.equal(ids.length, 4);
    assert.ok(
      ids.every((id) => id !== undefined && id === ids[0]),
      json.stdout,
    );
  });
});
