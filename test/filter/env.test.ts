import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  builtinServices,
  compilePredicate,
  FilterResolveError,
  loadServices,
  parseFilter,
  parseServices,
  readEphemeralPorts,
  resolveCgroupPath,
} from "../../src/filter/index.js";

describe("services", () => {
  test("parseServices reads names, aliases and comments; the first entry wins", () => {
    const t = parseServices("# c\nhttp\t80/tcp www # web\nhttp 8080/tcp\nntp 123/udp\nbad x/tcp\n");
    assert.equal(t.lookup("http", "tcp"), 80);
    assert.equal(t.lookup("www", "tcp"), 80);
    assert.equal(t.lookup("http", "udp"), undefined);
    assert.equal(t.lookup("ntp", "udp"), 123);
    assert.equal(t.lookup("bad", "tcp"), undefined);
  });

  test("a missing file falls back to the built-in table", () => {
    const t = loadServices("/nonexistent/services");
    assert.equal(t, builtinServices);
    assert.equal(t.lookup("domain", "udp"), 53);
    assert.equal(t.lookup("https", "tcp"), 443);
  });

  test("/etc/services is read at the first lookup of a name, not by a filter without one", () => {
    // A fresh process (the table is kept per process) that counts the reads of /etc/services.
    const filter = JSON.stringify(new URL("../../src/filter/index.js", import.meta.url).href);
    const code = `
      import fs from "node:fs";
      import { syncBuiltinESMExports } from "node:module";
      const read = fs.readFileSync;
      let reads = 0;
      fs.readFileSync = (path, ...rest) => (path === "/etc/services" && reads++, read(path, ...rest));
      syncBuiltinESMExports();
      const { parseFilter, filterFromObject } = await import(${filter});
      const counts = [];
      parseFilter("dport = 53 and dst 127.0.0.1");
      filterFromObject({ dport: 53 });
      counts.push(reads);
      const port = parseFilter("dport = :domain").port;
      parseFilter("sport = :https");
      counts.push(reads);
      console.log(JSON.stringify({ counts, port }));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
    const { counts, port } = JSON.parse(out) as { counts: number[]; port: number };
    assert.equal(port, 53);
    assert.deepEqual(counts, [0, existsSync("/etc/services") ? 1 : 0]);
  });

  test("a services file is read with node:fs", () => {
    const dir = mkdtempSync(join(tmpdir(), "sdt-services-"));
    try {
      writeFileSync(join(dir, "services"), "custom 4242/tcp\n");
      const t = loadServices(join(dir, "services"));
      assert.deepEqual(parseFilter("sport :custom", { services: t }), {
        type: "port",
        side: "src",
        op: "eq",
        port: 4242,
      });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe("env defaults", () => {
  test("readEphemeralPorts reads ip_local_port_range, else ss's 1024-4999", () => {
    const [lo, hi] = readEphemeralPorts();
    assert.ok(lo > 0 && hi >= lo && hi <= 65535);
    assert.deepEqual(readEphemeralPorts("/nonexistent"), [1024, 4999]);
  });

  test("dev lo resolves through if_nametoindex in this namespace", () => {
    const p = compilePredicate(parseFilter("dev lo"));
    assert.equal(typeof p, "function");
    assert.throws(() => compilePredicate(parseFilter("dev sdt-no-such-if")), FilterResolveError);
  });

  test("cgroup paths resolve to the cgroup2 directory's inode, absolute or under the mount", (t) => {
    const mount = "/sys/fs/cgroup/unified";
    const candidates = [mount, "/sys/fs/cgroup"];
    const root = candidates.find((c) => resolveCgroupPath(c) !== undefined);
    if (!root) {
      t.skip("no cgroup2 mount on this machine");
      return;
    }
    assert.equal(resolveCgroupPath("/"), statSync(root, { bigint: true }).ino);
    assert.equal(resolveCgroupPath("/nonexistent-sdt"), undefined);
    assert.equal(resolveCgroupPath("/etc"), undefined); // exists, but is no cgroup
    const name = `sdt-filter-${process.pid}`;
    try {
      mkdirSync(join(root, name));
    } catch (e) {
      t.skip(`cannot create a cgroup: ${(e as Error).message}`);
      return;
    }
    try {
      const ino = statSync(join(root, name), { bigint: true }).ino;
      assert.equal(resolveCgroupPath(`/${name}`), ino);
      assert.equal(resolveCgroupPath(join(root, name)), ino);
    } finally {
      rmdirSync(join(root, name));
    }
  });
});
