/**
 * The pin-directory walk against the real kernel: what it looks at before opening anything, what it
 * calls a file that is no namespace, which of those are notes rather than failures, how it treats
 * the caller's own namespace, and how a NetnsRef reopens exactly the namespace it names.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  allNetns,
  create,
  current,
  fromLabel,
  fromPath,
  type NetNS,
  NetnsError,
  NetnsNotFoundError,
  NotANetnsError,
  reopenNetns,
  walkNetns,
} from "../../src/netns/index.js";
import { cleanupScratchLeftovers, rootOnly, type Scratch, scratchDir, stayHome } from "./helpers.js";

/** A character device no driver serves: opening it fails with ENXIO, so any open would show. */
function unservedDevice(path: string): void {
  execFileSync("mknod", [path, "c", "240", "7"]);
}

describe("the pin-directory walk", { skip: rootOnly() }, () => {
  stayHome();
  let dir: Scratch;
  const ns: NetNS[] = [];
  before(() => {
    cleanupScratchLeftovers();
    dir = scratchDir();
    for (let i = 0; i < 2; i++) ns.push(create());
  });
  after(() => {
    for (const n of ns) n.close();
    dir?.dispose();
  });

  test("a device, a symlink to one and a FIFO are never opened: each is a special file, with no OS error", () => {
    const sub = scratchDir();
    try {
      unservedDevice(join(sub.dir, "a-device"));
      symlinkSync(join(sub.dir, "a-device"), join(sub.dir, "b-link-to-device"));
      execFileSync("mkfifo", [join(sub.dir, "c-fifo")]);
      sub.pin("d-good", ns[0]!);
      const all = allNetns({ netnsDirs: [sub.dir] });
      assert.deepEqual(
        [...all].map((e) => e.name),
        ["d-good"],
      );
      assert.deepEqual(
        all.failures.map(({ netns, error }) => {
          const e = error as NotANetnsError;
          return [netns, e.name, e.kind, e.cause?.code];
        }),
        [
          ["a-device", "NotANetnsError", "special-file", undefined],
          ["b-link-to-device", "NotANetnsError", "special-file", undefined],
          ["c-fifo", "NotANetnsError", "special-file", undefined],
        ],
      );
      for (const name of ["a-device", "b-link-to-device", "c-fifo"]) {
        assert.throws(
          () => fromPath(join(sub.dir, name)),
          (err: unknown) =>
            err instanceof NotANetnsError && err.kind === "special-file" && err.cause === undefined,
          `fromPath(${name}) refuses without opening`,
        );
      }
    } finally {
      sub.dispose();
    }
  });

  test("a plain file and a dangling symlink are notes, named as such; a missing directory is a failure", () => {
    const sub = scratchDir();
    try {
      writeFileSync(join(sub.dir, "a-plain"), "");
      symlinkSync(join(sub.dir, "nowhere"), join(sub.dir, "b-dangling"));
      sub.pin("c-good", ns[0]!);
      const all = allNetns({ netnsDirs: [sub.dir, join(sub.dir, "no-such-dir")] });
      assert.deepEqual(
        [...all].map((e) => e.name),
        ["c-good"],
      );
      // Looked at while scanning: the symlink, then the directory; opened after: the plain file.
      assert.deepEqual(
        all.notes.map((n) => [n.netns, n.skipped]),
        [
          ["b-dangling", "dangling-symlink"],
          ["a-plain", "plain-file"],
        ],
      );
      assert.deepEqual(
        all.failures.map((f) => f.netns),
        [join(sub.dir, "no-such-dir")],
      );
      assert.match(all.notes[0]!.message, /dangling symlink/);
      assert.match(all.notes[1]!.message, /plain file/);
    } finally {
      sub.dispose();
    }
  });

  test('host "first" yields the caller\'s namespace first and never again; "skip" leaves it out', () => {
    const sub = scratchDir();
    try {
      using home = current();
      sub.pin("a-host", home);
      sub.pin("b-other", ns[1]!);
      const first = [...walkNetns({ netnsDirs: [sub.dir], discover: false, host: "first" })].map((e) => [
        e.ref.label,
        e.host,
      ]);
      assert.deepEqual(first, [
        ["(host)", true],
        ["b-other", false],
      ]);
      const skipped = [...walkNetns({ netnsDirs: [sub.dir], discover: false, host: "skip" })].map(
        (e) => e.ref.label,
      );
      assert.deepEqual(skipped, ["b-other"]);
      const found = [...walkNetns({ netnsDirs: [sub.dir], discover: false })].map((e) => e.ref.label);
      assert.deepEqual(found, ["a-host", "b-other"]);
    } finally {
      sub.dispose();
    }
  });

  test("a ref reopens its namespace, and refuses a pin that now holds another one", () => {
    const path = dir.pin("ref-target", ns[0]!);
    const [entry] = [...walkNetns({ netnsDirs: [dir.dir], discover: false })].map((e) => e.ref);
    assert.deepEqual(entry, {
      label: "ref-target",
      name: "ref-target",
      dev: ns[0]!.dev,
      ino: ns[0]!.ino,
      path,
    });
    const copy = structuredClone(entry!);
    {
      using again = reopenNetns(copy);
      assert.ok(again.equals(ns[0]!));
      assert.equal(again.name, "ref-target");
    }
    dir.unpin("ref-target");
    dir.pin("ref-target", ns[1]!);
    assert.throws(() => reopenNetns(copy), NetnsNotFoundError, "same pin, another namespace");
    dir.unpin("ref-target");
  });

  test("the ref of the caller's own namespace never names a /proc/PID/fd/N path", () => {
    using home = current();
    const ref = home.ref;
    assert.equal(ref.path, undefined);
    assert.equal(ref.label, `net:[${home.ino}]`);
    assert.equal(ref.pid, process.pid);
    using again = reopenNetns(ref);
    assert.ok(again.equals(home));
  });

  test("fromLabel opens what a walk's labels name; net:[ino] cannot be opened by its label", () => {
    using byPid = fromLabel(`pid:${process.pid}`);
    using home = current();
    assert.ok(byPid.equals(home));
    assert.throws(() => fromLabel(`net:[${home.ino}]`), NetnsError);
  });
});
