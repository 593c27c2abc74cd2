/**
 * mapFileReadOnly(path): a file's bytes over a read-only mapping, without a copy; a SysError where
 * the file cannot be opened (ENOENT) or mapped (an empty file, /dev/null among them: EINVAL); no
 * descriptor stays open either way.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { mapFileReadOnly } from "../../src/sys/index.js";

const openCount = (): number => readdirSync("/proc/self/fd").length;

test("a file's bytes, mapped; what cannot be opened or mapped is a SysError naming the call", () => {
  const dir = mkdtempSync(join(tmpdir(), "sockdiag-map-"));
  try {
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 7) % 256));
    writeFileSync(join(dir, "f"), bytes);
    writeFileSync(join(dir, "empty"), "");
    const before = openCount();
    const mapped = mapFileReadOnly(join(dir, "f"));
    assert.equal(mapped.length, bytes.length);
    assert.ok(mapped.equals(bytes));
    assert.throws(() => mapFileReadOnly(join(dir, "missing")), {
      name: "SysError",
      code: "ENOENT",
      syscall: "open",
    });
    assert.throws(() => mapFileReadOnly(join(dir, "empty")), {
      name: "SysError",
      code: "EINVAL",
      syscall: "mmap",
    });
    assert.throws(() => mapFileReadOnly("/dev/null"), { name: "SysError", syscall: "mmap" });
    assert.equal(openCount(), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
