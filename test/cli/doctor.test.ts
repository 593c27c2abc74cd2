/**
 * `sockdiag doctor` as root (exit 0, a checklist, -j that parses into probe()'s shape) and without
 * privileges (destroy fails with EPERM, CAP_NET_ADMIN reported missing, exit 1).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { reportNamespaces } from "../../src/cli/output/index.js";
import type { ConntrackProbe } from "../../src/conntrack/probe.js";
import { PROTOCOL_NAMES, type ProbeResult } from "../../src/sockets/index.js";
import { mixedTable } from "../conntrack/population.js";
import { cleanupLeftovers, createNetns, describeAsRoot, insertConntrack } from "../kit/index.js";
import { CLI_MAIN, sockdiag } from "./cli.js";

const run = promisify(execFile);

describeAsRoot("sockdiag doctor", () => {
  test("as root: exit 0 and a checklist with every section", async () => {
    const result = await sockdiag(["doctor"]);
    assert.equal(result.code, 0, result.stderr);
    for (const heading of [
      "listing (sock_diag):",
      "destroying (SOCK_DESTROY):",
      "privileges:",
      "namespaces:",
    ])
      assert.ok(result.stdout.includes(heading), `${heading} in\n${result.stdout}`);
    assert.match(result.stdout, /^ {2}\[ok\] udp destroy {5}SOCK_DESTROY works/m);
    assert.match(result.stdout, /^ {2}\[ok\] CAP_NET_ADMIN/m);
  });

  test("as root, -j: the probe result as JSON", async () => {
    const result = await sockdiag(["doctor", "-j"]);
    assert.equal(result.code, 0, result.stderr);
    const probe = JSON.parse(result.stdout) as ProbeResult;
    assert.deepEqual(Object.keys(probe.diag).sort(), [...PROTOCOL_NAMES].sort());
    for (const p of ["tcp", "udp"] as const) assert.equal(probe.diag[p].ok, true, probe.diag[p].detail);
    assert.equal(probe.destroy.ok, true, probe.destroy.detail);
    assert.equal(probe.capabilities.netAdmin.ok, true);
    assert.equal(probe.capabilities.sysAdmin.ok, true);
    assert.deepEqual([probe.netns.enter.ok, probe.netns.create.ok], [true, true]);
  });

  test("as root, in a namespace: conntrack answers, deletes are allowed, and its entries are counted", async () => {
    await cleanupLeftovers();
    const ns = await createNetns("doctor-ct");
    try {
      const table = mixedTable();
      insertConntrack(ns.path, table);
      const { stdout } = await run("ip", [
        "netns",
        "exec",
        ns.name,
        process.execPath,
        CLI_MAIN,
        "doctor",
        "-j",
      ]);
      const { conntrack } = JSON.parse(stdout) as { conntrack: ConntrackProbe };
      assert.deepEqual(
        [conntrack.answers.ok, conntrack.delete.ok, conntrack.entries],
        [true, true, table.length],
        JSON.stringify(conntrack),
      );
      const text = await run("ip", ["netns", "exec", ns.name, process.execPath, CLI_MAIN, "doctor"]);
      assert.match(text.stdout, /^conntrack \(ctnetlink\):$/m);
      assert.match(text.stdout, /^ {2}\[ok\] answers {9}ctnetlink answers$/m);
      assert.match(text.stdout, /^ {2}\[ok\] delete {10}allowed/m);
      assert.match(
        text.stdout,
        new RegExp(`^ {2}\\[ok\\] entries {9}${table.length} in this namespace's table$`, "m"),
      );
    } finally {
      await ns.remove();
    }
  });

  test("unprivileged: conntrack refuses with EPERM; one note for the processes it could not look at", async () => {
    const result = await sockdiag(["doctor"], { unprivileged: true });
    assert.match(result.stdout, /^ {2}\[--\] answers {9}EPERM: .*CAP_NET_ADMIN/m);
    assert.match(result.stdout, /^ {2}\[--\] delete {10}EPERM: .*CAP_NET_ADMIN/m);
    const notes = result.stderr.split("\n").filter((l) => l.includes("note:"));
    assert.equal(notes.length, 1, result.stderr);
    assert.match(
      notes[0]!,
      /^sockdiag: note: skipped the network namespaces of \d+ process(es)?: .*needs CAP_SYS_PTRACE$/,
    );
    const json = await sockdiag(["doctor", "-j"], { unprivileged: true });
    const { conntrack } = JSON.parse(json.stdout) as { conntrack: ConntrackProbe };
    assert.deepEqual(
      [conntrack.answers.ok, conntrack.delete.ok, conntrack.entries],
      [false, false, undefined],
    );
  });

  test("with CAP_SYS_PTRACE held, the note about unreadable processes does not ask for it", () => {
    const lines: string[] = [];
    const note = { netns: "/proc/1/ns/net", skipped: "unreadable", message: "EACCES" };
    reportNamespaces([], [note, { ...note, netns: "/proc/2/ns/net" }], {
      write: (l: string) => lines.push(l),
    });
    assert.deepEqual(lines, [
      "sockdiag: note: skipped the network namespaces of 2 processes: /proc/PID/ns/net was refused (EACCES) even with CAP_SYS_PTRACE: a process of another user namespace, or a security module's rule\n",
    ]);
  });

  test("unprivileged, -j: destroy fails with EPERM, CAP_NET_ADMIN missing, exit 1", async () => {
    const result = await sockdiag(["doctor", "-j"], { unprivileged: true });
    assert.equal(result.code, 1, result.stderr);
    const probe = JSON.parse(result.stdout) as ProbeResult;
    assert.equal(probe.destroy.ok, false);
    assert.match(probe.destroy.detail, /^EPERM: .*CAP_NET_ADMIN/);
    assert.equal(probe.capabilities.netAdmin.ok, false);
    assert.match(probe.capabilities.netAdmin.detail, /CAP_NET_ADMIN missing/);
    // Listing needs no privilege.
    assert.equal(probe.diag.udp.ok, true, probe.diag.udp.detail);
  });

  test("unprivileged, table: the destroy line says EPERM and names CAP_NET_ADMIN", async () => {
    const result = await sockdiag(["doctor"], { unprivileged: true });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /^ {2}\[--\] udp destroy {5}EPERM: .*CAP_NET_ADMIN/m);
    assert.match(result.stdout, /^ {2}\[--\] CAP_NET_ADMIN {3}CAP_NET_ADMIN missing/m);
  });
});
