/**
 * `terminate-backend --netns-dir DIR` where DIR does not exist (the Cilium example of docs/cli.md on a
 * node without Cilium): a directory named on the command line must exist, as the agent's named
 * --netns-dir must — the run still visits every other namespace, names the directory and exits 1,
 * so that a mistyped directory never passes for "no pinned namespaces". The defaults are looked
 * at where present (the CLI's /run/netns, the agent's three). Dry run, sockets only: nothing is
 * touched, and no privilege is needed.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { sockdiag } from "./cli.js";

interface Report {
  ok: boolean;
  namespaces: { netns: string }[];
  failures: { netns: string; note?: string; error: { name: string; message: string } }[];
}

describe("terminate-backend --netns-dir: a named pin directory must exist", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdt-pin-dir-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const terminate = (pins: string, ...flags: string[]) =>
    sockdiag([
      "terminate-backend",
      "127.0.0.1:9",
      "--netns-dir",
      pins,
      "--no-discover",
      "--dry-run",
      "--no-conntrack",
      ...flags,
    ]);

  test("missing: the host is still visited; the directory is named; exit 1", async () => {
    const missing = join(dir, "cilium-netns");
    const r = await terminate(missing, "-j");
    assert.equal(r.code, 1, r.stderr);
    const report = JSON.parse(r.stdout) as Report;
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.namespaces.map((n) => n.netns),
      ["(host)"],
    );
    assert.deepEqual(
      report.failures.map((e) => [e.netns, e.error.name, e.note]),
      [[missing, "PinDirectoryNotFoundError", undefined]],
    );
    const text = await terminate(missing);
    assert.equal(text.code, 1);
    assert.match(
      text.stdout,
      new RegExp(`namespace source error: netns "${missing}": cannot read the pin directory`),
    );
  });

  test("present and empty: nothing to visit but the host; exit 0", async () => {
    const r = await terminate(dir, "-j");
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as Report;
    assert.equal(report.ok, true);
    assert.deepEqual(report.failures, []);
  });
});
