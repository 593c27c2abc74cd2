/**
 * The CLI under pipes, full disks and signals, as a user meets them: a reader that closes early
 * (`| head`), stdout on /dev/full, -F /dev/zero, and `kill` interrupted half way — each ends
 * cleanly, says what it must once, and `kill` accounts for everything it destroyed. Also the
 * meaning of -a/--all in `kill` (every state, as in ls) and of --destroy-all.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { after, before, test } from "node:test";
import { Errno } from "../../src/sys/index.js";
import { describeAsRoot, startUdpScene, type UdpScene } from "../kit/index.js";
import { CLI_MAIN, sockdiag } from "./cli.js";

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI with its stdout on `stdoutFd` (or a pipe read to the end). */
function runTo(args: readonly string[], stdoutFd?: number): Promise<Exit> {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], {
    stdio: ["ignore", stdoutFd ?? "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d;
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describeAsRoot("the CLI under pipes, full disks and signals", () => {
  let scene: UdpScene;
  const CLIENTS = 4000;

  before(async () => {
    scene = await startUdpScene("io");
    await scene.clients(CLIENTS);
  });
  after(async () => {
    await scene?.stop();
  });

  test("a reader that closes early (| head -1): exit 0, nothing on stderr", async () => {
    const child = spawn(process.execPath, [CLI_MAIN, "ls", "-u", "-a", "-N", scene.ns.name], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d;
    });
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once("close", (c) => resolve(c)));
    assert.equal(stderr, "");
    assert.equal(code, 0);
  });

  test("stdout on /dev/full: one line naming ENOSPC, exit 1", async () => {
    const full = openSync("/dev/full", "w");
    try {
      for (const args of [
        ["ls", "-u", "-a"],
        ["ls", "-u", "-a", "-j"],
      ]) {
        const r = await runTo([...args, "-N", scene.ns.name], full);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /^sockdiag: cannot write the output: ENOSPC[^\n]*\n$/);
      }
    } finally {
      closeSync(full);
    }
  });

  test("-F /dev/zero: a usage error past the cap, not a hang", async () => {
    const r = await sockdiag(["ls", "-u", "-F", "/dev/zero"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /filter file "\/dev\/zero" is larger than 1048576 bytes/);
  });

  for (const [signal, status] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    test(`${signal} in the middle of a kill: stops sending, prints what it destroyed and the report, exit ${status}`, async () => {
      const victims = await scene.clients(3000);
      const child = spawn(
        process.execPath,
        [
          CLI_MAIN,
          "kill",
          "-N",
          scene.ns.name,
          "-u",
          "--ndjson",
          `sport >= :1 and dst 127.0.0.1:${scene.receiver.sport}`,
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d;
      });
      // Read the first chunk, then stop reading: the pipe fills and the kill waits in its next write.
      await new Promise<void>((resolve) =>
        child.stdout.once("data", (d: Buffer) => {
          stdout += d;
          child.stdout.pause();
          resolve();
        }),
      );
      child.kill(signal);
      child.stdout.on("data", (d: Buffer) => {
        stdout += d;
      });
      child.stdout.resume();
      const code = await new Promise<number | null>((resolve) => child.once("close", (c) => resolve(c)));
      assert.equal(code, status, stderr);
      const printed = stdout.split("\n").filter((l) => l !== "").length;
      const m =
        /^(\d+) matched, (\d+) destroyed, (\d+) already gone, (\d+) failed(?:, (\d+) not attempted)?$/m.exec(
          stderr,
        );
      assert.ok(m, stderr);
      const [matched, destroyed, gone, failed, skipped] = m.slice(1).map((n) => Number(n ?? 0)) as number[];
      assert.equal(matched, destroyed! + gone! + failed! + skipped!, "the report balances");
      assert.equal(printed, destroyed, "every destroyed socket was printed");
      assert.ok(matched! < CLIENTS + victims.length, `stopped before the end (${matched} matched)`);
      assert.match(stderr, new RegExp(`interrupted by ${signal}`));
      const errnos = await scene.holder.poll(victims);
      const aborted = errnos.filter((e) => e === Errno.ECONNABORTED).length;
      assert.ok(aborted <= destroyed!, `${aborted} aborted of ${destroyed} reported`);
      await scene.holder.close(victims);
    });
  }

  test("kill -a is every state (as in ls); an empty filter needs --destroy-all", async () => {
    const [bound] = await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    const filter = `sport = :${bound!.sport}`;
    const connectedOnly = await sockdiag(["kill", "-N", scene.ns.name, "-u", "-j", filter]);
    assert.equal(connectedOnly.code, 0, connectedOnly.stderr);
    assert.equal(
      JSON.parse(connectedOnly.stdout).report.matched,
      0,
      "without -a, an unconnected socket is not selected",
    );
    for (const all of ["-a", "--all"]) {
      const refused = await sockdiag(["kill", "-N", scene.ns.name, "-u", all]);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /--destroy-all/);
    }
    const everyState = await sockdiag(["kill", "-N", scene.ns.name, "-u", "--all", "-j", filter]);
    assert.equal(everyState.code, 0, everyState.stderr);
    assert.equal(JSON.parse(everyState.stdout).report.destroyed, 1);

    const clients = await scene.clients(2);
    const everything = await sockdiag(["kill", "-N", scene.ns.name, "-u", "--destroy-all", "-j"]);
    assert.equal(everything.code, 0, everything.stderr);
    await scene.holder.waitFor(clients, "ECONNABORTED");
  });
});
