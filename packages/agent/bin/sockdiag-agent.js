#!/usr/bin/env node
/**
 * The `sockdiag-agent` command (package.json "bin"). It is committed, not built: npm links a
 * package's bins when it installs it, and in a fresh clone of the repository that happens before
 * the root's `prepare` script has built dist/. It runs the built agent: one file that holds the
 * agent and its libraries (@kubernetes/client-node, pino, prom-client), all but sockdiag — the
 * client library loads every API model it has when imported whole, ~60 MB of resident memory that
 * the agent never uses.
 */
import "../dist/bundle/sockdiag-agent.mjs";
