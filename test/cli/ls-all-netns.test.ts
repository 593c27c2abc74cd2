import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  cleanupLeftovers,
  columnDefaults,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  parseSs,
  runSs,
  type ScratchNetns,
} from "../kit/index.js";
import { keyOf } from "../sockets/list-scene.js";
import { type JsonSocket, sockdiag, sockdiagJson } from "./cli.js";

/** One namespace of the scene: its holder and the UDP sockets it holds. */
interface Member {
  /** undefined for the host (the test's own namespace). */
  ns: ScratchNetns | undefined;
  holder: Holder;
  held: HeldSocket[];
}

/** Open connected and unconnected UDP sockets over IPv4, IPv6 and v4-mapped IPv6. */
async function openUdp(holder: Holder): Promise<HeldSocket[]> {
  const [r4] = await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } });
  const [r6] = await holder.open({ kind: "udp", bind: { address: "::1" } });
  assert.ok(r4 && r6);
  const more = [
    ...(await holder.open({ kind: "udp", connect: { address: "127.0.0.1", port: r4.sport } }, 2)),
    ...(await holder.open({ kind: "udp", connect: { address: "::1", port: r6.sport } })),
    ...(await holder.open({
      kind: "udp",
      family: "inet6",
      connect: { address: "127.0.0.1", port: r4.sport },
    })),
    ...(await holder.open({ kind: "udp", protocol: "udplite", bind: { address: "127.0.0.1" } })),
  ];
  return [r4, r6, ...more];
}

describeAsRoot("sockdiag ls --all-netns", () => {
  const members: Member[] = [];
  /** A private pin directory holding bind mounts of the test's namespaces only, so that namespaces
   * other tests add and delete meanwhile (pins half made or half gone) cannot disturb the run. */
  let pins: string;

  before(async () => {
    await cleanupLeftovers();
    pins = mkdtempSync(join(tmpdir(), "sdt-pins-"));
    const host = await Holder.start();
    members.push({ ns: undefined, holder: host, held: await openUdp(host) });
    for (let i = 0; i < 3; i++) {
      const ns = await createNetns(`all-${i}`);
      const member: Member = { ns, holder: await Holder.start({ netnsPath: ns.path }), held: [] };
      members.push(member);
      member.held = await openUdp(member.holder);
      const pin = join(pins, ns.name);
      writeFileSync(pin, "");
      execFileSync("mount", ["--bind", ns.path, pin]);
    }
  });
  after(async () => {
    for (const m of members) {
      if (!m.ns) continue;
      try {
        execFileSync("umount", [join(pins, m.ns.name)], { stdio: "ignore" });
      } catch {
        // Not mounted: `before` failed before it got there.
      }
    }
    await Promise.allSettled(members.map((m) => m.holder.stop()));
    await Promise.allSettled(members.map((m) => m.ns?.remove()));
    rmSync(pins, { recursive: true, force: true });
  });

  const label = (m: Member) => m.ns?.name ?? "(host)";
  const udpOnly = (h: HeldSocket) => h.protocol === "udp" && h.listed;

  for (const flags of [["-u"], ["-u", "-a"]]) {
    const connectedOnly = flags.length === 1;
    test(`ls --all-netns ${flags.join(" ")} shows each namespace's UDP sockets, labelled, as ss -N shows them`, async () => {
      const r = await sockdiag(["ls", "--all-netns", "--netns-dir", pins, ...flags, "-j"]);
      assert.equal(r.code, 0, r.stderr);
      const got = JSON.parse(r.stdout) as JsonSocket[];
      for (const m of members) {
        const want = m.held.filter((h) => udpOnly(h) && (!connectedOnly || h.state === "established"));
        assert.ok(want.length > 0);
        const mine = got.filter((s) => s.netns === label(m));
        const keys = new Set(mine.map(keyOf));
        for (const h of want) assert.ok(keys.has(keyOf(h)), `${label(m)}: missing ${JSON.stringify(h)}`);
        if (!m.ns) continue;
        // A pinned namespace of the scene: exactly what ss -N NAME shows, and nothing else.
        const args = ["-N", m.ns.name, "-H", "-n", "-e", ...flags];
        const ss = parseSs(await runSs(args), columnDefaults(flags));
        assert.deepEqual([...keys].sort(), ss.map((row) => `udp:${row.cookie}:${row.inode}`).sort());
        assert.deepEqual([...keys].sort(), want.map(keyOf).sort());
      }
      assert.ok(got.every((s) => s.protocol === "udp"));
      // Each socket is listed once, under one namespace.
      const all = got.map(keyOf);
      assert.equal(new Set(all).size, all.length);
    });
  }

  test("the table gets a Netns column, (host) for the caller's own namespace", async () => {
    const r = await sockdiag(["ls", "--all-netns", "--netns-dir", pins, "-u", "-a", "-e"]);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trimEnd().split("\n");
    assert.deepEqual(header?.split(/\s+/).slice(0, 3), ["Netns", "Netid", "State"]);
    for (const m of members) {
      const h = m.held.find((s) => s.protocol === "udp" && s.state === "established" && s.family === "inet");
      assert.ok(h);
      // By cookie, which no other namespace's socket shares; 127.0.0.1:PORT may recur in each of them.
      const cookie = `sk:${BigInt(h.cookie).toString(16)}`;
      const row = rows.find((l) => l.split(/\s+/).includes(cookie));
      assert.ok(row, `no row with ${cookie} in\n${r.stdout}`);
      assert.deepEqual(row.split(/\s+/).slice(0, 3), [m.ns?.name ?? "(host)", "udp", "ESTAB"]);
    }
  });

  test("a filter applies in every namespace", async () => {
    const target = members[1]?.held[0];
    assert.ok(target);
    const got = await sockdiagJson([
      "ls",
      "--all-netns",
      "--netns-dir",
      pins,
      "-u",
      `dport = :${target.sport}`,
    ]);
    // Every namespace has sockets connected to its own receiver; this port is the receiver's of one of them.
    assert.ok(got.some((s) => s.netns === label(members[1] as Member)));
    assert.ok(got.every((s) => s.dport === target.sport && s.state === "established"));
  });
});
