import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { before, test } from "node:test";
import { cleanupLeftovers, createNetns, ipCommand, listNetns, NETNS_DIR, withNetns } from "../kit/netns.js";
import { describeAsRoot } from "../kit/root.js";

/** A pid that belonged to a process that has exited (a child we ran and reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(r.stdout.toString());
}

describeAsRoot("test kit: scratch namespaces", () => {
  before(async () => {
    await cleanupLeftovers();
  });

  test("createNetns pins a fresh sdt- namespace with lo up, and remove deletes it", async () => {
    const ns = await createNetns("kit");
    try {
      assert.match(ns.name, new RegExp(`^sdt-${process.pid}-\\d+-kit$`));
      assert.equal(ns.path, `${NETNS_DIR}/${ns.name}`);
      assert.ok((await listNetns()).includes(ns.name));
      assert.notEqual(statSync(ns.path).ino, statSync("/proc/self/ns/net").ino);
      assert.match(await ns.ip("link", "show", "lo"), /[<,]UP[,>]/);
    } finally {
      await ns.remove();
    }
    assert.ok(!(await listNetns()).includes(ns.name));
    await ns.remove(); // idempotent
  });

  test("names are unique", async () => {
    await withNetns(3, async (nss) => {
      assert.equal(new Set(nss.map((n) => n.name)).size, 3);
    });
  });

  test("withNetns removes its namespaces when the callback throws", async () => {
    let names: string[] = [];
    await assert.rejects(
      withNetns(2, async (nss) => {
        names = nss.map((n) => n.name);
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.equal(names.length, 2);
    const left = await listNetns();
    assert.deepEqual(
      names.filter((n) => left.includes(n)),
      [],
    );
  });

  test("cleanupLeftovers removes namespaces of dead creators only", async () => {
    const dead = `sdt-${deadPid()}-1-leftover`;
    const foreign = `sdt-kit-${process.pid}-foreign`;
    await ipCommand("netns", "add", dead);
    await ipCommand("netns", "add", foreign);
    const mine = await createNetns();
    try {
      const removed = await cleanupLeftovers();
      assert.ok(removed.includes(dead), `removed ${removed.join(", ")}`);
      const left = await listNetns();
      assert.ok(!left.includes(dead));
      assert.ok(left.includes(mine.name), "a live process's namespace is kept");
      assert.ok(left.includes(foreign), "a name not in the kit's form is kept");
    } finally {
      await mine.remove();
      await ipCommand("netns", "del", foreign);
      if ((await listNetns()).includes(dead)) await ipCommand("netns", "del", dead);
    }
  });
});
