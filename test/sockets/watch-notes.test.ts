/**
 * A watch over every namespace rescans for new ones; the entries it cannot use (plain files in a
 * pin directory) are met again at every rescan, and each is told once.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { SocketWatch } from "../../src/sockets/watch.js";
import { describeAsRoot } from "../kit/index.js";

describeAsRoot("watch --all-netns notes", () => {
  test("a plain file in a pin directory is noted once, however many rescans meet it", () => {
    const dir = mkdtempSync(join(tmpdir(), "sdt-watch-notes-"));
    try {
      writeFileSync(join(dir, "plain-first"), "not a namespace");
      using watch = new SocketWatch({ netns: "all", netnsDirs: [dir] });
      const about = (name: string) => watch.notes.filter((n) => n.netns.includes(name));
      assert.equal(about("plain-first").length, 1, "noted at the first scan");
      // A file added later is noted only by a rescan: once it is, a rescan has met the first again.
      writeFileSync(join(dir, "plain-later"), "not a namespace either");
      // Each poll waits up to 100 ms for a rescan; 100 of them are far more than one takes.
      for (let i = 0; i < 100 && about("plain-later").length === 0; i++) watch.poll(100);
      assert.equal(about("plain-later").length, 1, "a rescan noted the file added later");
      watch.poll(0);
      assert.equal(about("plain-first").length, 1, "not noted again by the rescan");
      assert.equal(about("plain-later").length, 1);
      assert.deepEqual(watch.failures, [], "notes, not failures");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
