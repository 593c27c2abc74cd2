/**
 * The bin turns Node's compile cache on (where Node has one: 22.1 and later) only in a home that
 * belongs to the user running it: a cache someone else can write would choose the code root runs.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import * as nodeModule from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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

/**
 * A copy of the installed layout (bin, bundle, koffi) in a scratch folder, so that a test can
 * change the bundle under a cache made from it.
 */
function scratchInstall(root: string): { bin: string; bundle: string } {
  const repo = join(dirname(CLI_MAIN), "..", "..");
  const bin = join(root, "src", "cli", "bin.cjs");
  const bundle = join(root, "dist", "bundle", "sockdiag-cli.cjs");
  mkdirSync(dirname(bin), { recursive: true });
  mkdirSync(dirname(bundle), { recursive: true });
  copyFileSync(CLI_MAIN, bin);
  copyFileSync(join(repo, "dist", "bundle", "sockdiag-cli.cjs"), bundle);
  symlinkSync(join(repo, "node_modules"), join(root, "node_modules"));
  return { bin, bundle };
}

function versionWith(bin: string, home: string): string {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  return execFileSync(process.execPath, [bin, "--version"], { env, encoding: "utf8" });
}

/** Every file under dir, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? (e as { path?: string }).path ?? dir, e.name));
}

test("a cache made from another bundle, or a corrupt one, never changes what runs", () => {
  const root = mkdtempSync(join(tmpdir(), "sdt-install-"));
  const home = join(root, "home");
  mkdirSync(home);
  try {
    const { bin, bundle } = scratchInstall(root);
    const first = versionWith(bin, home);
    assert.match(first, /^sockdiag \d/);
    // The same length, other code: a cache keyed by length alone would run the old bundle.
    const text = readFileSync(bundle, "utf8");
    const stale = text.replace(
      /(VERSION\s*=\s*")(\d)/,
      (_, head: string, d: string) => `${head}${d === "9" ? 8 : 9}`,
    );
    assert.notEqual(stale, text, "the bundle's version text was found");
    assert.equal(stale.length, text.length);
    writeFileSync(bundle, stale);
    const changed = versionWith(bin, home);
    assert.notEqual(changed, first);
    assert.match(changed, /^sockdiag \d/);
    // Every cache file overwritten with garbage of its own length: the run must not notice.
    const cached = hasCompileCache ? filesUnder(join(home, ".cache", "sockdiag")) : [];
    if (hasCompileCache) assert.ok(cached.length > 0, "the runs left a cache");
    for (const file of cached) writeFileSync(file, Buffer.alloc(statSync(file).size, 0xa5));
    assert.equal(versionWith(bin, home), changed);
    for (const file of cached) writeFileSync(file, "");
    assert.equal(versionWith(bin, home), changed);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
