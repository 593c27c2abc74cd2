/**
 * Pin directories as a busy host has them: `ip netns add` leaves a plain file for an instant (and a
 * failed add leaves one behind), and a pin may be a symlink to nothing. The CLI names each as a
 * note and does not fail for it; a device in a pin directory is a failure, and is never opened.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { create } from "../../src/netns/index.js";
import { describeAsRoot } from "../kit/index.js";
import { type Scratch, scratchDir } from "../netns/helpers.js";
import { sockdiag } from "./cli.js";

describeAsRoot("pin-directory notes in the CLI", () => {
  let scratch: Scratch;
  let dir: string;
  const name = `sdt-${process.pid}-notes`;

  before(() => {
    scratch = scratchDir();
    dir = scratch.dir;
    using ns = create();
    scratch.pin(name, ns);
    writeFileSync(join(dir, "half-added"), "");
    symlinkSync(join(dir, "nowhere"), join(dir, "dangling"));
  });
  after(() => scratch?.dispose());

  const notes = (stderr: string) => ({
    plain: /note: skipped \(plain-file\).*half-added.*plain file/.test(stderr),
    dangling: /note: skipped \(dangling-symlink\).*dangling.*dangling symlink/.test(stderr),
  });

  test("netns ls lists the namespace, notes the plain file and the dangling symlink, exits 0", async () => {
    const r = await sockdiag(["netns", "ls", "--netns-dir", dir, "-j"]);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as { name: string | null }[];
    assert.ok(rows.some((row) => row.name === name));
    assert.deepEqual(notes(r.stderr), { plain: true, dangling: true });
  });

  test("ls --all-netns notes them and exits 0", async () => {
    const r = await sockdiag(["ls", "-u", "--all-netns", "--netns-dir", dir, "-H"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(notes(r.stderr), { plain: true, dangling: true });
  });

  test("terminate-backend notes them, reports ok and exits 0", async () => {
    const r = await sockdiag(["terminate-backend", "127.0.0.1:9", "--netns-dir", dir, "--no-discover", "-j"]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      failures: unknown[];
      notes: { netns: string; skipped: string; message: string }[];
    };
    assert.equal(report.ok, true);
    assert.deepEqual(report.failures, [], "notes are no failures");
    assert.deepEqual(report.notes.map((n) => [n.netns, n.skipped]).sort(), [
      ["dangling", "dangling-symlink"],
      ["half-added", "plain-file"],
    ]);
  });

  test("a device in a pin directory is a failure that names it, and is never opened", async () => {
    const device = join(dir, "zz-device");
    // No driver serves this number: an open would fail with ENXIO.
    execFileSync("mknod", [device, "c", "240", "7"]);
    try {
      const r = await sockdiag(["netns", "ls", "--netns-dir", dir, "-j"]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /zz-device.*not a network namespace: it is a special file/);
      assert.doesNotMatch(r.stderr, /ENXIO/);
    } finally {
      rmSync(device);
    }
  });
});
