/**
 * Raw sockets against ss, in a throwaway namespace whose raw sockets a holder child keeps open.
 * Without raw_diag (this project's kernel) both list them from /proc/net/raw and raw6 read in that
 * namespace; with it, both ask sock_diag — the same comparison holds either way. kill -w refuses
 * them when no raw_diag can destroy them, and changes nothing.
 */
import assert from "node:assert/strict";
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
  type SsRecord,
} from "../kit/index.js";
import { kernelLacks } from "../sockets/list-scene.js";
import { type JsonSocket, sockdiag, sockdiagJson } from "./cli.js";

/** A raw socket as both tools name it: state, addresses, ports (the protocol number) and queues. */
const ssKey = (r: SsRecord) => `${r.state} ${r.src}:${r.sport} ${r.dst}:${r.dport} ${r.recvQ}/${r.sendQ}`;
const jsonKey = (s: JsonSocket) =>
  `${s.state} ${s.src}:${s.sport} ${s.dst}:${s.dport} ${s.rqueue}/${s.wqueue}`;

describeAsRoot("ls -w: raw sockets as ss lists them", () => {
  let ns: ScratchNetns;
  let holder: Holder;
  let held: HeldSocket[];
  const noDiag = kernelLacks("raw");

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("raw");
    holder = await Holder.start({ netnsPath: ns.path });
    held = [
      ...(await holder.open({ kind: "raw", ipProtocol: 1 })),
      ...(await holder.open({ kind: "raw", ipProtocol: 17, bind: { address: "127.0.0.1" } })),
      ...(await holder.open({ kind: "raw", ipProtocol: 253, connect: { address: "127.0.0.2" } }, 2)),
      ...(await holder.open({ kind: "raw", ipProtocol: 58, family: "inet6" })),
      ...(await holder.open({
        kind: "raw",
        ipProtocol: 254,
        bind: { address: "::1" },
        connect: { address: "::1" },
      })),
    ];
  });
  after(async () => {
    await holder?.stop();
    await ns?.remove();
  });

  // Plain `ss -w` shows connected sockets only, and no State column.
  const ssRows = async (args: string[]) =>
    parseSs(
      await runSs(["-H", "-n", "-e", ...args], ns.name),
      columnDefaults(args, args.length === 1 ? { state: "established" } : {}),
    );

  for (const args of [
    ["-w", "-a"],
    ["-w"],
    ["-w", "-l"],
    ["-w", "-a", "-4"],
    ["-w", "-a", "-6"],
    ["-w", "-a", "dst", "127.0.0.2"],
    ["-w", "-a", "sport", "=", ":58"],
    ["-w", "-a", "not", "src", "127.0.0.1", "and", "sport", "!=", ":1"],
    ["-w", "state", "established"],
  ]) {
    test(`ls ${args.join(" ")} lists what ss ${args.join(" ")} lists`, async () => {
      const [mine, theirs] = await Promise.all([sockdiagJson(["ls", "-N", ns.name, ...args]), ssRows(args)]);
      assert.ok(mine.every((s) => s.protocol === "raw" && s.netns === ns.name));
      assert.deepEqual(mine.map(jsonKey).sort(), theirs.map(ssKey).sort());
      if (args.length === 2 && args[1] === "-a") assert.equal(mine.length, held.length);
    });
  }

  test("each raw socket has the inode, uid and protocol the kernel gave it; from /proc a cookie of 0", async () => {
    const mine = await sockdiagJson(["ls", "-N", ns.name, "-w", "-a"]);
    for (const h of held) {
      const s = mine.find((x) => x.inode === h.inode);
      assert.ok(s, `not listed: ${JSON.stringify(h)}`);
      assert.deepEqual(
        [s.family, s.state, s.src, s.sport, s.dst, s.dport, s.uid],
        [h.family, h.state, h.src, h.sport, h.dst, h.dport, 0],
      );
      assert.equal((s as JsonSocket & { rawProtocol?: number }).rawProtocol, h.sport);
      if (noDiag) assert.equal(s.cookie, "0");
    }
  });

  test("-p names the process holding each raw socket, as ss -p does", async () => {
    const [table, theirs] = await Promise.all([
      sockdiag(["ls", "-N", ns.name, "-w", "-a", "-p", "-H"]),
      ssRows(["-w", "-a", "-p"]),
    ]);
    assert.equal(table.code, 0, table.stderr);
    const users = (words: string[]) => words.find((w) => w.startsWith("users:"));
    const mine = table.stdout
      .trimEnd()
      .split("\n")
      .map((l) => users(l.split(/\s+/)))
      .sort();
    assert.equal(mine.length, held.length);
    assert.ok(
      mine.every((u) => u?.includes(`pid=${holder.pid},`)),
      table.stdout,
    );
    assert.deepEqual(mine, theirs.map((r) => users(r.extra)).sort());
  });

  test("--all-netns lists the namespace's raw sockets under its name, as -N does", async () => {
    const [all, one] = await Promise.all([
      sockdiagJson(["ls", "--all-netns", "-w", "-a"]),
      sockdiagJson(["ls", "-N", ns.name, "-w", "-a"]),
    ]);
    const mine = all.filter((s) => s.netns === ns.name);
    assert.deepEqual(mine.map(jsonKey).sort(), one.map(jsonKey).sort());
    assert.equal(mine.length, held.length);
  });

  test("without -w, ls -a lists the raw sockets among the rest, as ss -a does", async () => {
    const mine = await sockdiagJson(["ls", "-N", ns.name, "-a"]);
    const theirs = (await ssRows(["-a"])).filter((r) => r.netid === "raw");
    assert.deepEqual(
      mine
        .filter((s) => s.protocol === "raw")
        .map(jsonKey)
        .sort(),
      theirs.map(ssKey).sort(),
    );
  });

  test("kill -w says why it cannot destroy them (no raw_diag) and changes nothing", async (t) => {
    if (!noDiag) {
      t.skip("this kernel has raw_diag: raw sockets can be destroyed");
      return;
    }
    // Not netlink: each listing holds a sock_diag socket of its own.
    const before = await sockdiagJson(["ls", "-N", ns.name, "-a", "-A", "all,!netlink"]);
    for (const args of [
      ["kill", "-w", "dst", "127.0.0.2"],
      ["kill", "-w", "--dry-run", "dst", "127.0.0.2"],
      ["kill", "-t", "-u", "-w", "--destroy-all"],
      ["ls", "-w", "-K", "dst", "127.0.0.2"],
    ]) {
      const r = await sockdiag([args[0]!, "-N", ns.name, ...args.slice(1)]);
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, /raw sockets cannot be destroyed here: this kernel has no raw_diag/);
      assert.match(r.stderr, /nothing was destroyed/);
    }
    const after = await sockdiagJson(["ls", "-N", ns.name, "-a", "-A", "all,!netlink"]);
    assert.deepEqual(after.map((s) => s.inode).sort(), before.map((s) => s.inode).sort());
    // recv on each still says "nothing to read" (EAGAIN), not ECONNABORTED: none was destroyed.
    const errnos = await holder.poll(held.map((h) => h.id));
    assert.ok(
      errnos.every((e) => e === 0 || e === 11),
      `recv errnos ${errnos}`,
    );
  });
});
