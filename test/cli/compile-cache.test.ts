/**
 * The bin turns Node's compile cache on (where Node has one: 22.1 and later) only in a home that
 * belongs to the user running it: a cache someone else can write would choose the code root runs.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import * as nodeModule from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { requireRoot } from "../kit/index.js";
import { CLI_MAIN } from "./cli.js";

const hasCompileCache =
  typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === "function";

/** Run `sockdiag --version` with HOME set to `home`; where did it put a cache? */
function cacheAfterRun(home: string): boolean {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  const out = execFileSync(process.execPath, [CLI_MAIN, "--version"], { env, encoding: "utf8" });
  assert.match(out, /^sockdiag \d/);
  return existsSync(join(home, ".cache", "sockdiag"));
}

test("the compile cache goes into the user's own home, and only where Node has one", () => {
  const home = mkdtempSync(join(tmpdir(), "sdt-home-"));
  try {
    assert.equal(cacheAfterRun(home), hasCompileCache);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test("a home that belongs to another user gets no cache", (t) => {
  if (!requireRoot(t)) return;
  const home = mkdtempSync(join(tmpdir(), "sdt-home-"));
  try {
    chownSync(home, 65534, 65534);
    assert.equal(cacheAfterRun(home), false);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
