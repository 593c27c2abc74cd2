import assert from "node:assert/strict";
import { once } from "node:events";
import { existsSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { after, describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import {
  add,
  create,
  current,
  fromName,
  fromPath,
  fromPid,
  InvalidNetnsNameError,
  NetnsError,
  NetnsNotFoundError,
  NotANetnsError,
  remove,
  validateNetnsName,
} from "../../src/netns/index.js";
import { linkOf, rootOnly, stayHome, threadNetns } from "./helpers.js";

describe("NetNS handles", { skip: rootOnly() }, () => {
  stayHome();

  test("current() is the thread's namespace, with its inode as id and nsfs st_dev", () => {
    using ns = current();
    assert.equal(linkOf(ns), threadNetns());
    assert.equal(ns.id, ns.ino);
    assert.equal(ns.dev, statSync("/proc/self/ns/net").dev);
    assert.equal(readlinkSync(ns.path), threadNetns(), "path is /proc/PID/fd/FD while open");
  });

  test("equality is by (st_dev, st_ino) whatever the path", () => {
    using a = current();
    using b = fromPid(process.pid);
    using c = fromPath("/proc/self/ns/net");
    using other = create();
    assert.ok(a.equals(b) && b.equals(c));
    assert.ok(!a.equals(other));
    assert.notEqual(other.ino, a.ino);
  });

  test("close() is idempotent, `using` closes, a closed handle refuses to give its fd", () => {
    let kept: ReturnType<typeof current>;
    {
      using ns = current();
      kept = ns;
      assert.equal(ns.closed, false);
    }
    assert.equal(kept.closed, true);
    kept.close();
    assert.throws(() => kept.fd, NetnsError);
  });

  test("dup() is an independent handle of the same namespace", () => {
    const ns = create();
    const copy = ns.dup();
    ns.close();
    try {
      assert.equal(copy.closed, false);
      assert.equal(copy.ino, ns.ino);
      assert.equal(readlinkSync(`/proc/self/fd/${copy.fd}`), `net:[${ns.ino}]`);
      assert.equal(readlinkSync(copy.path), `net:[${ns.ino}]`, "a /proc/PID/fd path follows the copy's fd");
      const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${copy.fd}`, "latin1"))?.[1];
      assert.ok(flags && (Number.parseInt(flags, 8) & 0o2000000) !== 0, `close-on-exec (flags ${flags})`);
    } finally {
      copy.close();
    }
  });

  test("a copy is closed in a worker thread without Node's warning about a descriptor fs did not open", async () => {
    const netns = new URL("../../src/netns/index.js", import.meta.url).href;
    // Worker threads track the descriptors fs opens (trackUnmanagedFds) and warn on closing another.
    const worker = new Worker(
      `import(${JSON.stringify(netns)}).then(({ current }) => {
        const ns = current();
        const copy = ns.dup();
        copy.close();
        ns.close();
      });`,
      { eval: true, stderr: true },
    );
    let stderr = "";
    worker.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(worker, "exit")) as [number];
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /unmanaged mode/);
  });

  test("files that are not network namespaces are refused with what they are", () => {
    const cases: [string, string][] = [
      ["/etc/hostname", "a plain file"],
      ["/proc/self/ns/mnt", "a mnt namespace"],
      ["/dev/null", "a special file"],
      ["/proc", "a directory"],
    ];
    for (const [path, actual] of cases) {
      assert.throws(
        () => fromPath(path),
        (err: unknown) => err instanceof NotANetnsError && err.actual === actual && err.netns === path,
        path,
      );
    }
  });

  test("a missing path or process is NetnsNotFoundError, a bad pid a NetnsError", () => {
    assert.throws(() => fromPath("/nonexistent/sdt-netns"), NetnsNotFoundError);
    assert.throws(() => fromPid(2 ** 30), NetnsNotFoundError);
    for (const pid of [0, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => fromPid(pid),
        (err: unknown) => err instanceof NetnsError && /not a process id/.test(err.message),
      );
    }
  });

  test("fromName of a name nobody pinned is NetnsNotFoundError naming it", () => {
    assert.throws(
      () => fromName("sdt-netns-no-such-name"),
      (err: unknown) => err instanceof NetnsNotFoundError && err.netns === "sdt-netns-no-such-name",
    );
  });

  describe("namespace names", () => {
    const missingDir = "/nonexistent/sdt-netns-dir";
    after(() => assert.equal(existsSync(missingDir), false, "validation must not touch the file system"));
    const bad = ["", "a/b", "/abs", ".", "..", "../up", "nul\0byte", "x".repeat(256)];

    for (const name of bad) {
      test(`${JSON.stringify(name.slice(0, 20))} is refused before the file system is touched`, () => {
        for (const op of [
          () => validateNetnsName(name),
          () => fromName(name, { dir: missingDir }),
          () => add(name, { dir: missingDir }),
          () => remove(name, { dir: missingDir }),
        ]) {
          assert.throws(op, (err: unknown) => err instanceof InvalidNetnsNameError && err.netns === name);
        }
      });
    }

    test("ordinary names, with dots and up to 255 bytes, are accepted", () => {
      for (const name of ["a", "a..b", ".hidden", "pod-1.ns", "x".repeat(255)]) validateNetnsName(name);
    });
  });
});
