/**
 * How the CLI reports a stdout it cannot write: a reader that went away is no error (a pipe says
 * EPIPE; a socket, which a parent's `stdio: "pipe"` is, says ECONNRESET when closed with data
 * unread), anything else is one line and exit 1.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { EXIT_FAILED, EXIT_OK, OutputError, reportError } from "../../src/cli/io/index.js";

function report(code: string): { exit: number; stderr: string } {
  let stderr = "";
  const sink = new Writable({
    write(chunk, _encoding, done) {
      stderr += chunk;
      done();
    },
  });
  const cause = Object.assign(new Error(`${code}: write failed`), { code });
  return { exit: reportError(new OutputError(code, cause), sink), stderr };
}

for (const code of ["EPIPE", "ECONNRESET"]) {
  test(`${code} on stdout: the reader went away, exit 0 and nothing on stderr`, () => {
    assert.deepEqual(report(code), { exit: EXIT_OK, stderr: "" });
  });
}

test("ENOSPC on stdout: one line naming it, exit 1", () => {
  assert.deepEqual(report("ENOSPC"), {
    exit: EXIT_FAILED,
    stderr: "sockdiag: cannot write the output: ENOSPC: write failed\n",
  });
});
