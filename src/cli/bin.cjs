#!/usr/bin/env node
/**
 * The `sockdiag` command (package.json "bin"): runs the bundled CLI with a V8 code cache of ours
 * (code-cache.cjs), so that a run after the first does not compile the bundle again — on every Node,
 * not Node's own compile cache from 22.1: that one holds only what V8 compiled eagerly, so a run
 * with it compiles the rest again. The cache lives in ~/.cache/sockdiag where no one but root and
 * the user running sockdiag can change that folder or any above it (code-cache.cjs checks);
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off. This file is plain CommonJS and committed, not built:
 * npm links a package's bins when it installs it, and in a fresh clone that happens before the
 * root's `prepare` script has built the bundle it loads.
 */
"use strict";
const { join } = require("node:path");

const bundle = join(__dirname, "..", "..", "dist", "bundle", "sockdiag-cli.cjs");
const home = process.env.HOME;
if (process.env.NODE_DISABLE_COMPILE_CACHE || !home?.startsWith("/")) require(bundle);
else require("./code-cache.cjs").runWithCodeCache(bundle, home);
