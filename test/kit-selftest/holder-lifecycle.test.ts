import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Holder, HolderError } from "../kit/holder.js";
import { describeAsRoot } from "../kit/root.js";

const ORPHAN = fileURLToPath(new URL("./fixtures/orphan.js", import.meta.url));

/** gone tells whether `pid` has exited (no /proc entry, or a zombie awaiting its reaper). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

/** waitGone polls until `pid` has exited, failing after `ms`. */
async function waitGone(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!gone(pid)) {
    if (Date.now() > deadline) assert.fail(`process ${pid} still runs after ${ms} ms`);
    await sleep(10);
  }
}

describeAsRoot("test kit: holder lifecycle", () => {
  test("stop ends the child, and later requests reject as 'exited'", async () => {
    const holder = await Holder.start();
    assert.equal(gone(holder.pid), false);
    await holder.open({ kind: "udp" }, 3);
    await holder.stop();
    assert.equal(gone(holder.pid), true);
    await holder.stop(); // idempotent
    await assert.rejects(holder.poll([1]), (e: unknown) => e instanceof HolderError && e.reason === "exited");
  });

  test("a path the child cannot enter rejects start with its errno", async () => {
    await assert.rejects(
      Holder.start({ netnsPath: "/nonexistent/netns" }),
      (e: unknown) =>
        e instanceof HolderError && e.code === "ENOENT" && e.message.includes("/nonexistent/netns"),
    );
    await assert.rejects(
      Holder.start({ netnsPath: "/proc/self/ns/uts" }),
      (e: unknown) => e instanceof HolderError && e.code === "EINVAL" && e.syscall === "setns",
    );
  });

  test("stop unlinks the unix socket paths the holder bound", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdt-kit-"));
    try {
      const holder = await Holder.start();
      const path = join(dir, "s");
      await holder.open({ kind: "unix", type: "dgram", name: path });
      assert.ok(existsSync(path));
      await holder.stop();
      assert.ok(!existsSync(path));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const mode of ["exit", "hang"] as const) {
    test(`a holder does not outlive a parent that ${mode === "exit" ? "exits without stopping it" : "is killed"}`, async () => {
      const parent = spawn(process.execPath, [ORPHAN, mode], { stdio: ["ignore", "pipe", "inherit"] });
      const first = await createInterface({ input: parent.stdout })[Symbol.asyncIterator]().next();
      const pid = Number(first.value);
      assert.ok(pid > 0, `fixture printed ${JSON.stringify(first.value)}`);
      if (mode === "hang") {
        assert.equal(gone(pid), false);
        parent.kill("SIGKILL");
      }
      await waitGone(pid, 5000);
    });
  }
});
