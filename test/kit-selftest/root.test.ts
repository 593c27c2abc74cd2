import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { privilegeProblem, requireRoot } from "../kit/root.js";
import { startFailure, WITHOUT_CAPABILITIES } from "../kit/unprivileged.js";

// A tiny test file run without capabilities, to see what the guard does without privileges.
const GUARDED = fileURLToPath(new URL("./fixtures/guarded.js", import.meta.url));

function runUnprivileged(ci: boolean) {
  // Without NODE_TEST_CONTEXT the child prints plain TAP instead of talking to our test runner.
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
  const env = { ...inherited, CI: ci ? "true" : "false" };
  const [cmd, ...args] = [...WITHOUT_CAPABILITIES, process.execPath, "--test-reporter=tap", GUARDED];
  const r = spawnSync(cmd!, args, { env, encoding: "utf8" });
  const failure = startFailure(r.stderr);
  if (failure) throw new Error(`the guarded child did not start: ${failure}`);
  return r;
}

test("root guard: this machine runs the integration tests as root", (t) => {
  assert.equal(privilegeProblem(), undefined);
  assert.equal(requireRoot(t), true);
});

test("root guard: without root, outside CI, tests are skipped loudly", (t) => {
  if (!requireRoot(t)) return; // setpriv needs root
  const r = runUnprivileged(false);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(
    r.stderr,
    /SKIPPED: needs root .*test "guarded test" \(lacks CAP_NET_ADMIN and CAP_SYS_ADMIN\)/,
  );
  assert.match(r.stderr, /SKIPPED: needs root .*suite "guarded suite"/);
  assert.match(r.stdout, /^ok 1 - guarded test # SKIP/m);
  assert.match(r.stdout, /^ok 2 - guarded suite # SKIP/m);
  assert.match(r.stdout, /^# fail 0$/m);
});

test("root guard: without root, in CI, tests fail", (t) => {
  if (!requireRoot(t)) return;
  const r = runUnprivileged(true);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /^not ok 1 - guarded test$/m);
  assert.match(r.stdout, /^not ok 2 - guarded suite$/m);
  assert.match(r.stdout, /needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN: lacks CAP_NET_ADMIN/);
});
