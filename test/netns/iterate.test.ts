import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  allNetns,
  create,
  current,
  discoverNetns,
  type NetNS,
  NetnsNotFoundError,
} from "../../src/netns/index.js";
import { cleanupScratchLeftovers, rootOnly, type Scratch, scratchDir, stayHome } from "./helpers.js";

describe("allNetns()", { skip: rootOnly() }, () => {
  stayHome();
  let dir1: Scratch;
  let dir2: Scratch;
  let missing: string;
  const ns: NetNS[] = [];
  before(() => {
    cleanupScratchLeftovers();
    dir1 = scratchDir();
    dir2 = scratchDir();
    missing = join(dir2.dir, "no-such-dir");
    for (let i = 0; i < 4; i++) ns.push(create());
  });
  after(() => {
    for (const n of ns) n.close();
    dir1?.dispose();
    dir2?.dispose();
  });

  test("yields every good namespace once, reports each bad entry, goes on after each", () => {
    const [a, b, doomed, c] = ns as [NetNS, NetNS, NetNS, NetNS];
    dir1.pin("a-good", a);
    dir1.pin("b-same-as-a", a);
    writeFileSync(join(dir1.dir, "c-plain"), "not a namespace");
    symlinkSync(join(dir1.dir, "nowhere"), join(dir1.dir, "d-dangling"));
    dir1.pin("e-good", b);
    dir1.pin("z-doomed", doomed);
    dir2.pin("x-good", c);
    dir2.pin("y-same-as-b", b);

    const all = allNetns({ netnsDirs: [missing, dir1.dir, dir2.dir] });
    const yielded: string[] = [];
    const errorsSeen: number[] = [];
    for (const entry of all) {
      yielded.push(entry.name);
      errorsSeen.push(all.failures.length + all.notes.length);
      assert.equal(entry.path, join(entry.name[0] === "x" ? dir2.dir : dir1.dir, entry.name));
      assert.equal(entry.netns.name, entry.name);
      if (entry.name === "a-good") dir1.unpin("z-doomed");
    }
    assert.deepEqual(yielded, ["a-good", "e-good", "x-good"]);
    // Pins are looked at (stat) when the walk starts, opened one per step.
    assert.deepEqual(errorsSeen, [2, 3, 4], "failures and notes are readable while the loop runs");
    // A failure is { netns, error }; a namespace passed over is a note { netns, skipped, message }.
    assert.equal(all.failures.length, 1);
    const missed = all.failures[0]!;
    assert.ok(missed.error instanceof NetnsNotFoundError && missed.netns === missing, "missing directory");
    assert.deepEqual(
      all.notes.map((n) => [n.netns, n.skipped]),
      [
        ["d-dangling", "dangling-symlink"],
        ["c-plain", "plain-file"],
        ["z-doomed", "vanished"],
      ],
    );
    assert.match(all.notes[0]!.message, /dangling symlink/);
    assert.ok(
      all.notes.every((n) => !("error" in n)),
      "a note is no failure: it carries no error",
    );
  });

  test("yielded handles are the pinned namespaces, and are closed when the loop moves on", () => {
    const kept: NetNS[] = [];
    const ids: number[] = [];
    for (const { netns } of allNetns({ netnsDirs: [dir1.dir, dir2.dir] })) {
      kept.push(netns);
      ids.push(netns.ino);
      assert.equal(netns.closed, false);
    }
    assert.deepEqual(ids.sort(), [ns[0], ns[1], ns[3]].map((n) => n!.ino).sort());
    assert.ok(kept.every((n) => n.closed));
  });

  test("breaking out of the loop closes the handle it was lent; dup() keeps one", () => {
    let lent: NetNS | undefined;
    let copy: NetNS | undefined;
    for (const { netns } of allNetns({ netnsDirs: [dir1.dir] })) {
      lent = netns;
      copy = netns.dup();
      break;
    }
    assert.equal(lent?.closed, true);
    assert.equal(copy?.closed, false);
    assert.ok(copy?.equals(ns[0]!));
    copy?.close();
  });

  test("two directories that are one (like /run/netns and /var/run/netns) yield each namespace once", () => {
    const alias = join(dir2.dir, "alias");
    symlinkSync(dir1.dir, alias);
    const names = [...allNetns({ netnsDirs: [dir1.dir, alias] })].map((e) => e.name);
    assert.deepEqual(names, ["a-good", "e-good"]);
  });

  test("each pass starts afresh", () => {
    const all = allNetns({ netnsDirs: [missing] });
    assert.deepEqual([...all], []);
    assert.equal(all.failures.length, 1);
    assert.deepEqual([...all], []);
    assert.equal(all.failures.length, 1);
  });
});

describe("discoverNetns()", { skip: rootOnly() }, () => {
  stayHome();

  test("finds pinned and unpinned namespaces once each, with their pids and names", async () => {
    const pins = scratchDir();
    using pinnedOnly = create();
    using used = create();
    pins.pin("pinned", pinnedOnly);
    // A process of ours in `used`, which nothing pins.
    const child = spawn(
      "nsenter",
      [`--net=/proc/${process.pid}/fd/${used.fd}`, "sh", "-c", "echo ready; exec sleep 600"],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    try {
      const [ready] = (await once(child.stdout, "data")) as [Buffer];
      assert.equal(ready.toString(), "ready\n");
      using home = current();

      const found = discoverNetns({ netnsDirs: [pins.dir] });
      const entries = [...found].map(({ name, names, pids, netns, path }) => ({
        name,
        names,
        pids,
        ino: netns.ino,
        path,
      }));
      const inos = entries.map((e) => e.ino);
      assert.equal(new Set(inos).size, inos.length, "each namespace once");

      const usedEntry = entries.find((e) => e.ino === used.ino);
      assert.deepEqual(usedEntry?.pids, [child.pid]);
      assert.equal(usedEntry?.name, undefined);
      assert.equal(usedEntry?.path, `/proc/${child.pid}/ns/net`);

      const pinnedEntry = entries.find((e) => e.ino === pinnedOnly.ino);
      assert.deepEqual(pinnedEntry, {
        name: "pinned",
        names: ["pinned"],
        pids: [],
        ino: pinnedOnly.ino,
        path: join(pins.dir, "pinned"),
      });

      assert.ok(
        entries.find((e) => e.ino === home.ino)?.pids.includes(process.pid),
        "our own namespace, with us in it",
      );
      for (const f of found.failures)
        assert.ok(!f.netns.startsWith(pins.dir), `no error about our pins: ${f.error.message}`);
    } finally {
      child.kill();
      await once(child, "exit");
      pins.dispose();
    }
  });
});
