import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { after, before, test } from "node:test";
import { cleanupLeftovers, createNetns, describeAsRoot, type ScratchNetns } from "../kit/index.js";
import { type ListScene, startScene } from "../sockets/list-scene.js";
import { sockdiag } from "./cli.js";

/** One row of `sockdiag netns ls -j`. */
interface NetnsRow {
  name: string | null;
  path: string;
  inode: number;
  pids: number[];
  sockets: number | null;
  error?: string;
}

describeAsRoot("sockdiag netns ls", () => {
  let scenes: ListScene[] = [];
  let empty: ScratchNetns;

  before(async () => {
    await cleanupLeftovers();
    // No MPTCP: its TCP subflows would be counted too, with no holder record standing for them.
    scenes = [
      await startScene({ label: "nsls-a", mptcp: false }),
      await startScene({ label: "nsls-b", mptcp: false }),
    ];
    empty = await createNetns("nsls-empty");
  });
  after(async () => {
    await Promise.allSettled(scenes.map((s) => s.stop()));
    await empty?.remove();
  });

  async function rows(): Promise<NetnsRow[]> {
    const r = await sockdiag(["netns", "ls", "-j"]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as NetnsRow[];
  }

  test("-j lists the test's namespaces with their inode, holder pid and socket count", async () => {
    const all = await rows();
    for (const scene of scenes) {
      const row = all.find((r) => r.name === scene.ns.name);
      assert.ok(row, `${scene.ns.name} not in ${JSON.stringify(all.map((r) => r.name))}`);
      assert.equal(row.path, scene.ns.path);
      assert.equal(row.inode, statSync(scene.ns.path).ino);
      assert.equal(row.inode, scene.holder.netnsInode);
      assert.deepEqual(row.pids, [scene.holder.pid]);
      assert.equal(row.sockets, scene.listed.length);
      assert.equal(row.error, undefined);
    }
    const none = all.find((r) => r.name === empty.name);
    assert.deepEqual(none, {
      name: empty.name,
      path: empty.path,
      inode: statSync(empty.path).ino,
      pids: [],
      sockets: 0,
    });
  });

  test("each namespace is listed once, the caller's own among them", async () => {
    const all = await rows();
    const inodes = all.map((r) => r.inode);
    assert.equal(new Set(inodes).size, inodes.length);
    const own = statSync("/proc/self/ns/net").ino;
    assert.ok(inodes.includes(own));
    assert.equal(all.find((r) => r.inode === own)?.name, "(host)", "the caller's own is named (host)");
  });

  test("the count follows sockets opened and closed", async () => {
    const scene = scenes[0] as ListScene;
    const count = async () => (await rows()).find((r) => r.name === scene.ns.name)?.sockets;
    const extra = await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.1" } }, 3);
    try {
      assert.equal(await count(), scene.listed.length + 3);
    } finally {
      await scene.holder.close(extra);
    }
    assert.equal(await count(), scene.listed.length);
  });

  test("the table shows one line per namespace with its name, path, inode, pids and count", async () => {
    const r = await sockdiag(["netns", "ls"]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines[0]?.split(/\s+/), ["NAME", "PATH", "INODE", "PIDS", "SOCKETS"]);
    for (const scene of scenes) {
      const line = lines.find((l) => l.startsWith(`${scene.ns.name} `));
      assert.ok(line, r.stdout);
      assert.deepEqual(line.split(/\s+/), [
        scene.ns.name,
        scene.ns.path,
        String(statSync(scene.ns.path).ino),
        String(scene.holder.pid),
        String(scene.listed.length),
      ]);
    }
    // Other namespaces on the host may come and go between two runs: compare only what is ours.
    const headless = (await sockdiag(["netns", "ls", "-H"])).stdout.trimEnd().split("\n");
    assert.ok(!headless.some((l) => l.startsWith("NAME ")), "no header with -H");
    for (const scene of scenes) assert.ok(headless.some((l) => l.startsWith(`${scene.ns.name} `)));
  });

  test("--netns-dir restricts the pinned names to that directory", async () => {
    const r = await sockdiag(["netns", "ls", "-j", "--netns-dir", "/nonexistent-sdt-dir"]);
    const all = JSON.parse(r.stdout) as NetnsRow[];
    assert.ok(
      all.every((row) => row.name === (row.inode === statSync("/proc/self/ns/net").ino ? "(host)" : null)),
      "no pinned names from elsewhere",
    );
    // The holders' namespaces are still found, through their processes.
    for (const scene of scenes) assert.ok(all.some((row) => row.inode === scene.holder.netnsInode));
    assert.match(r.stderr, /nonexistent-sdt-dir/);
  });
});
