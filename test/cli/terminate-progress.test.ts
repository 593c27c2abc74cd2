/**
 * terminate-backend's progress line: on stderr past 20 namespaces when stderr is a terminal (run
 * under script(1), which gives the command a pseudo-terminal), never when it is a pipe; stdout the
 * same report either way. The terminal is told by isatty(3), not by building process.stderr.
 * Dry run over a private pin directory of the test's own namespaces, sockets only.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cleanupLeftovers, createNetns, describeAsRoot, type ScratchNetns } from "../kit/index.js";
import { CLI_MAIN, sockdiag } from "./cli.js";

const COUNT = 20;

describeAsRoot("terminate-backend's progress line", () => {
  const nss: ScratchNetns[] = [];
  let dir: string;
  let pins: string;
  const args = () => [
    "terminate-backend",
    "127.0.0.1:9",
    "--netns-dir",
    pins,
    "--no-discover",
    "--one-pass",
    "off",
    "--dry-run",
    "--no-conntrack",
    "-j",
  ];

  before(async () => {
    await cleanupLeftovers();
    dir = mkdtempSync(join(tmpdir(), "sdt-progress-"));
    pins = join(dir, "pins");
    execFileSync("mkdir", [pins]);
    for (let i = 0; i < COUNT; i++) {
      const ns = await createNetns(`progress-${i}`);
      nss.push(ns);
      const pin = join(pins, ns.name);
      writeFileSync(pin, "");
      execFileSync("mount", ["--bind", ns.path, pin]);
    }
  });
  after(async () => {
    for (const ns of nss) {
      try {
        execFileSync("umount", [join(pins, ns.name)], { stdio: "ignore" });
      } catch {
        // Not mounted: `before` failed before it got there.
      }
    }
    await Promise.allSettled(nss.map((ns) => ns.remove()));
    rmSync(dir, { recursive: true, force: true });
  });

  test("a terminal stderr shows it; a pipe does not; stdout is the same report", async () => {
    const piped = await sockdiag(args());
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stderr, "");
    const out = join(dir, "out.json");
    const command = [process.execPath, CLI_MAIN, ...args()].join(" ");
    // script(1) runs the command with a pseudo-terminal as stdin, stdout and stderr, and copies
    // what the terminal shows to its own stdout: stdout goes to a file, stderr stays the terminal.
    const shown = execFileSync("script", ["-q", "-e", "-c", `exec ${command} > ${out}`, "/dev/null"], {
      encoding: "utf8",
      env: { ...process.env, SOCKDIAG_DEBUG: "" },
    });
    const total = COUNT + 1;
    assert.match(
      shown,
      new RegExp(`\\rnamespace ${total - 1}( of ${total})?\\rnamespace ${total}( of ${total})?\\r?\\n`),
    );
    assert.doesNotMatch(shown, new RegExp(`namespace ${total - 2}\\b`));
    const report = (text: string) =>
      (JSON.parse(text) as { namespaces: { netns: string }[] }).namespaces.map((n) => n.netns).sort();
    assert.deepEqual(report(readFileSync(out, "utf8")), report(piped.stdout));
    assert.equal(report(piped.stdout).length, total);
  });
});
