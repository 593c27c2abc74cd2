#!/usr/bin/env node
/**
 * The `sockdiag-agent` command (package.json "bin"). It is committed, not built: npm links a
 * package's bins when it installs it, and in a fresh clone of the repository that happens before
 * the root's `prepare` script has built dist/. It runs the built agent.
 */
import "../dist/src/main.js";
