/**
 * isTerminal(fd): isatty(3), which is what process.stderr.isTTY asks (through libuv) without
 * building the stream: true for a terminal (a pseudo-terminal's master is one), false for a
 * regular file, a character device that is no terminal (/dev/null), a pipe, and a closed descriptor.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isTerminal } from "../../src/sys/index.js";

function withFd<T>(path: string, flags: string, fn: (fd: number) => T): T {
  const fd = openSync(path, flags);
  try {
    return fn(fd);
  } finally {
    closeSync(fd);
  }
}

test("a pseudo-terminal is a terminal", () => {
  assert.equal(
    withFd("/dev/ptmx", "r+", (fd) => isTerminal(fd)),
    true,
  );
});

test("a regular file, /dev/null and a closed descriptor are not", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdt-terminal-"));
  try {
    assert.equal(
      withFd(join(dir, "file"), "w", (fd) => isTerminal(fd)),
      false,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(
    withFd("/dev/null", "r", (fd) => isTerminal(fd)),
    false,
  );
  const fd = openSync("/dev/null", "r");
  closeSync(fd);
  assert.equal(isTerminal(fd), false);
});

test("a pipe is not, and the answer is process.stderr.isTTY's", () => {
  // A child whose stderr is a pipe answers both ways; the parent sees what it printed.
  const code = `const { isTerminal } = await import(${JSON.stringify(new URL("../../src/sys/index.js", import.meta.url).href)}); console.log(JSON.stringify([isTerminal(2), Boolean(process.stderr.isTTY)]));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [false, false]);
});
