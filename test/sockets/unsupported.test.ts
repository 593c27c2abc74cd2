/**
 * A protocol this kernel cannot list (no sock_diag handler: SCTP on this project's kernel, whatever
 * probe() says elsewhere) is an error naming it — unless the query asks to leave such protocols
 * out, as `sockdiag ls` does when no protocol is named. Raw sockets without raw_diag are listed
 * from /proc/net/raw instead (test/sockets/raw-proc.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { listSockets, probe, UnsupportedProtocolError } from "../../src/sockets/index.js";

const missing = Object.entries(probe().diag)
  .filter(([protocol, item]) => !item.ok && protocol !== "raw")
  .map(([protocol]) => protocol as "sctp");

test("an unsupported protocol throws a typed error naming it, or is left out on request", (t) => {
  if (missing.length === 0) {
    t.skip("this kernel lists every protocol: nothing to check");
    return;
  }
  for (const protocol of missing) {
    assert.throws(
      () => listSockets({ protocols: ["udp", protocol] }),
      (err) => err instanceof UnsupportedProtocolError && err.protocol === protocol,
    );
    const both = listSockets({ protocols: ["udp", protocol], ignoreUnsupported: true });
    assert.ok(both.every((s) => s.protocol === "udp"));
  }
});
