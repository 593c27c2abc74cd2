#!/usr/bin/env node
/**
 * The `sockdiag` command (package.json "bin"): runs the bundled CLI with a V8 code cache of ours
 * (code-cache.cjs), so that a run after the first does not compile the bundle again — on every Node,
 * not Node's own compile cache from 22.1: that one holds only what V8 compiled eagerly, so a run
 * with it compiles the rest again (the README has the figures). The cache lives
 * in the user's own ~/.cache/sockdiag, and only where that home and its .cache belong to the user
 * running sockdiag — not for root under another user's HOME, as some sudo setups leave it: whoever
 * can write the cache chooses the code run. NODE_DISABLE_COMPILE_CACHE=1 turns it off. This file is
 * plain CommonJS and committed, not built: npm links a package's bins when it installs it, and in a
 * fresh clone that happens before the root's `prepare` script has built the bundle it loads.
 */
"use strict";
const { mkdirSync, statSync } = require("node:fs");
const { join } = require("node:path");

/** The cache folder, or undefined where it could not be trusted or is turned off. */
function cacheDir() {
  const home = process.env.HOME;
  if (process.env.NODE_DISABLE_COMPILE_CACHE || !home?.startsWith("/")) return undefined;
  const uid = process.geteuid();
  for (const dir of [home, join(home, ".cache")]) {
    try {
      if (statSync(dir).uid !== uid) return undefined;
    } catch (err) {
      if (dir === home || err.code !== "ENOENT") return undefined;
    }
  }
  return join(home, ".cache", "sockdiag");
}

/** Whether `dir` exists or could be made (not in a read-only home). */
function made(dir) {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return true;
  } catch {
    return false;
  }
}

const bundle = join(__dirname, "..", "..", "dist", "bundle", "sockdiag-cli.cjs");
const dir = cacheDir();
if (dir && made(dir)) require("./code-cache.cjs").runWithCodeCache(bundle, dir);
else require(bundle);
