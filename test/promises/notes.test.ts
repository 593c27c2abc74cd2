/**
 * sockdiag/promises' streams carry the namespaces passed over as the sync calls do: a plain file
 * in a pin directory is a note of iterateSockets and of watchSockets, not a failure.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { iterateSockets, watchSockets } from "sockdiag/promises";
import { describeAsRoot } from "../kit/root.js";

describeAsRoot("notes through sockdiag/promises", () => {
  test("a plain file among the pins: a note of iterateSockets and of watchSockets", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "sdt-promises-notes-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "half-added"), "");
    const selection = { netns: "all" as const, netnsDirs: [dir], discover: false };

    const listing = iterateSockets({ protocols: ["udp"], ...selection });
    for await (const _ of listing);
    assert.deepEqual(
      listing.notes.map((n) => [n.netns, n.skipped]),
      [["half-added", "plain-file"]],
    );
    assert.deepEqual(listing.failures, []);

    const watch = watchSockets({ protocols: ["udp"], ...selection, signal: AbortSignal.timeout(60_000) });
    await watch.ready;
    try {
      assert.deepEqual(
        watch.notes.map((n) => [n.netns, n.skipped]),
        [["half-added", "plain-file"]],
      );
      assert.deepEqual(watch.failures, []);
    } finally {
      watch.close();
    }
  });
});
