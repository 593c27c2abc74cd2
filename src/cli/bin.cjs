#!/usr/bin/env node
/**
 * The `sockdiag` command (package.json "bin"): runs the bundled CLI with Node's compile cache on
 * (Node 22.1 and later), so that a run after the first does not compile the bundle again. The
 * cache lives in the user's own ~/.cache/sockdiag, and only where that home and its .cache belong
 * to the user running sockdiag — not for root under another user's HOME, as some sudo setups
 * leave it: whoever can write the cache chooses the code run. NODE_DISABLE_COMPILE_CACHE=1 turns
 * it off. This file is plain CommonJS and committed, not built: npm links a package's bins when it
 * installs it, and in a fresh clone that happens before the root's `prepare` script has built the
 * bundle it loads.
 */
"use strict";
const { statSync } = require("node:fs");
const { enableCompileCache } = require("node:module");
const { join } = require("node:path");

/** The cache folder, or undefined where it could not be trusted (or Node has no compile cache). */
function cacheDir() {
  const home = process.env.HOME;
  if (typeof enableCompileCache !== "function" || !home?.startsWith("/")) return undefined;
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

const dir = cacheDir();
if (dir) enableCompileCache(dir);
require("../../dist/bundle/sockdiag-cli.cjs");
