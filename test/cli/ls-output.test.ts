import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { cleanupLeftovers, describeAsRoot, parseSs, runSs, type SsRecord } from "../kit/index.js";
import { assertAllListed, kernelLacks, keyOf, type ListScene, startScene } from "../sockets/list-scene.js";
import { type JsonSocket, sockdiag, sockdiagJson } from "./cli.js";

/** The JSON fields of an inet socket (docs/cli.md), in order. */
const INET_FIELDS = [
  "netns",
  "family",
  "protocol",
  "state",
  "src",
  "sport",
  "dst",
  "dport",
  "ifindex",
  "cookie",
  "inode",
  "uid",
  "rqueue",
  "wqueue",
];

const HEADER = ["Netid", "State", "Recv-Q", "Send-Q", "Local", "Address:Port", "Peer", "Address:Port"];

/** The fields a table row and an ss row must agree on. */
function rowFields(r: SsRecord): unknown[] {
  const common = [r.netid, r.state, r.recvQ, r.sendQ, r.src, r.inode];
  return r.family === "unix" ? [...common, r.peer] : [...common, r.sport, r.dst, r.dport, r.cookie];
}

describeAsRoot("sockdiag ls output formats", () => {
  let scene: ListScene;
  /** Everything in the scene's namespace: every protocol, every state. */
  const ALL = ["-a", "-t", "-u", "-x", "-M"];
  let ns: string;

  before(async () => {
    await cleanupLeftovers();
    scene = await startScene({ label: "ls-out" });
    ns = scene.ns.name;
  });
  after(async () => {
    await scene?.stop();
  });

  test("-j prints one JSON array with the documented fields, the cookie as a decimal string", async () => {
    const r = await sockdiag(["ls", "-N", ns, ...ALL, "-j"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.ok(r.stdout.startsWith("[") && r.stdout.endsWith("]\n"));
    const sockets = JSON.parse(r.stdout) as JsonSocket[];
    assertAllListed(
      sockets,
      scene.listed.filter((s) => s.protocol !== "udplite"),
    );
    const inet = sockets.filter((s) => s.family !== "unix");
    assert.ok(inet.length > 0);
    for (const s of inet) {
      assert.deepEqual(Object.keys(s).slice(0, INET_FIELDS.length), INET_FIELDS, JSON.stringify(s));
      assert.match(s.cookie, /^[1-9][0-9]*$/);
      for (const k of ["sport", "dport", "ifindex", "inode", "uid", "rqueue", "wqueue"] as const)
        assert.equal(typeof s[k], "number", `${k} of ${JSON.stringify(s)}`);
      assert.equal(s.uid, 0);
      assert.equal(s.ifindex, 0);
    }
    for (const s of sockets.filter((x) => x.family === "unix")) {
      assert.match(s.cookie, /^[1-9][0-9]*$/);
      assert.ok(["stream", "dgram", "seqpacket"].includes(s.type ?? ""), JSON.stringify(s));
    }
  });

  test("-j with nothing to list prints an empty array", async () => {
    const r = await sockdiag(["ls", "-N", ns, "-t", "sport", "=", ":1", "-j"]);
    assert.deepEqual([r.code, r.stdout], [0, "[]\n"]);
  });

  test("--ndjson prints one object per line, the same as -j", async () => {
    const r = await sockdiag(["ls", "-N", ns, ...ALL, "--ndjson"]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    assert.equal(lines.pop(), "", "output ends with a newline");
    const objects = lines.map((l) => JSON.parse(l) as JsonSocket);
    assert.ok(objects.every((o) => typeof o === "object" && !Array.isArray(o)));
    const array = await sockdiagJson(["ls", "-N", ns, ...ALL]);
    assert.deepEqual(objects.map(keyOf).sort(), array.map(keyOf).sort());
  });

  test("the table has ss's header and columns; every row reads as ss's row for the same socket", async () => {
    const table = await sockdiag(["ls", "-N", ns, ...ALL, "-e"]);
    assert.equal(table.code, 0, table.stderr);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    assert.deepEqual(header?.split(/\s+/), HEADER);
    const ours = parseSs(rows.join("\n"));
    const theirs = parseSs(await runSs(["-N", ns, "-H", "-n", "-e", ...ALL]));
    assert.equal(ours.length, theirs.length);
    const byKey = new Map(theirs.map((r) => [rowKey(r), r]));
    for (const row of ours) {
      const twin = byKey.get(rowKey(row));
      assert.ok(twin, `ss has no row for ${JSON.stringify(row)}`);
      assert.deepEqual(rowFields(row), rowFields(twin));
    }
  });

  test("-H leaves the header out, and only the header", async () => {
    const withHeader = await sockdiag(["ls", "-N", ns, ...ALL]);
    const without = await sockdiag(["ls", "-N", ns, ...ALL, "-H"]);
    assert.equal(without.code, 0, without.stderr);
    const lines = without.stdout.trimEnd().split("\n");
    assert.ok(lines.length > 0 && !lines.some((l) => l.startsWith("Netid")));
    assert.equal(lines.length, withHeader.stdout.trimEnd().split("\n").length - 1);
    assert.equal(parseSs(without.stdout).length, lines.length);
  });

  test("-e shows ino: and sk: (the cookie in hex) on every row; without -e there are none", async () => {
    const rows = (await sockdiag(["ls", "-N", ns, ...ALL, "-e", "-H"])).stdout.trimEnd().split("\n");
    const json = await sockdiagJson(["ls", "-N", ns, ...ALL]);
    assert.equal(rows.length, json.length);
    for (const s of json) {
      const tail = ` ino:${s.inode} sk:${BigInt(s.cookie).toString(16)}`;
      assert.equal(rows.filter((l) => l.includes(tail)).length, 1, `one row ends with${tail}`);
    }
    const plain = (await sockdiag(["ls", "-N", ns, ...ALL, "-H"])).stdout;
    assert.doesNotMatch(plain, /ino:|sk:/);
  });

  test("-p shows the holder as the owner of its sockets, in the table and in JSON", async () => {
    const table = await sockdiag(["ls", "-N", ns, "-u", "-a", "-p"]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout.split("\n")[0] ?? "", /Process$/);
    const rows = table.stdout.trimEnd().split("\n").slice(1);
    assert.ok(rows.length > 0);
    // The holder's name as ss -p prints it ("node"; Node 24 renames its main thread "MainThread").
    const pid = scene.holder.pid;
    const ssRows = await runSs(["-H", "-n", "-u", "-a", "-p"], ns);
    const name = new RegExp(`users:\\(\\("([^"]+)",pid=${pid},`).exec(ssRows)?.[1];
    assert.ok(name, `ss -p names the holder ${pid}:\n${ssRows}`);
    for (const row of rows) assert.match(row, new RegExp(`users:\\(\\("${name}",pid=${pid},fd=\\d+\\)\\)$`));
    // JSON: the holder owns exactly the sockets whose inode is one of its descriptors' (MPTCP
    // subflows share their MPTCP socket's inode, so they show its owner too, as with ss -p).
    const json = await sockdiagJson(["ls", "-N", ns, ...ALL, "-p"]);
    const heldInodes = new Set(scene.listed.filter((s) => s.protocol !== "udplite").map((s) => s.inode));
    for (const s of json) {
      const owners = s.owners;
      assert.ok(Array.isArray(owners), `owners of ${JSON.stringify(s)}`);
      const byHolder = owners.filter((o) => o.pid === scene.holder.pid);
      assert.equal(byHolder.length, heldInodes.has(s.inode) ? 1 : 0, JSON.stringify(s));
      for (const o of byHolder) assert.deepEqual([o.command, typeof o.fd], [name, "number"]);
    }
    const inodesOwned = new Set(json.filter((s) => s.owners?.length).map((s) => s.inode));
    assert.deepEqual([...inodesOwned].sort(), [...heldInodes].sort());
  });

  test("-m shows socket memory and -i TCP info", async () => {
    const m = await sockdiag(["ls", "-N", ns, "-t", "-m", "-H", "-O"]);
    const mRows = m.stdout.trimEnd().split("\n");
    assert.ok(mRows.length > 0 && mRows.every((l) => /skmem:\(r\d+,rb\d+,t\d+,tb\d+/.test(l)), m.stdout);
    const i = await sockdiag(["ls", "-N", ns, "-t", "-i", "-H", "-O"]);
    const iRows = i.stdout.trimEnd().split("\n");
    assert.ok(iRows.length > 0 && iRows.every((l) => /rto:\S+ .*cwnd:\d+/.test(l)), i.stdout);
  });

  test("a protocol this kernel lacks exits 1 with 'not supported by this kernel'", async (t) => {
    if (!kernelLacks("sctp")) {
      t.skip("this kernel lists SCTP sockets");
      return;
    }
    const r = await sockdiag(["ls", "-N", ns, "-S"]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /sctp.*not supported by this kernel/);
    // Without a protocol flag, the tables this kernel lacks are left out, as ss leaves them out.
    const fallback = await sockdiag(["ls", "-N", ns, "-a"]);
    assert.equal(fallback.code, 0, fallback.stderr);
  });
});

/** rowKey identifies a parsed row: inet by netid and cookie, unix by inode. */
function rowKey(r: SsRecord): string {
  return r.family === "unix" ? `unix:${r.inode}` : `${r.netid}:${r.cookie}:${r.inode}`;
}
