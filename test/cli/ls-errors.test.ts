import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { InvalidNetnsNameError } from "../../src/netns/index.js";
import { listSockets } from "../../src/sockets/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Holder,
  ipCommand,
  netnsName,
  removeNetns,
  type ScratchNetns,
} from "../kit/index.js";
import { keyOf } from "../sockets/list-scene.js";
import { CLI_MAIN, type CliResult, type JsonSocket, sockdiag } from "./cli.js";

/** Assert a usage error: exit 2, nothing on stdout, and stderr matching `message`. */
function assertUsage(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, message);
}

describeAsRoot("sockdiag usage errors and privileges", () => {
  let ns: ScratchNetns;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("ls-err");
  });
  after(async () => {
    await ns?.remove();
  });

  test("an unknown flag exits 2 and names it", async () => {
    assertUsage(await sockdiag(["ls", "--bogus-flag"]), /unknown option '--bogus-flag'/);
    assertUsage(await sockdiag(["ls", "-Q"]), /unknown option '-Q'/);
    assertUsage(await sockdiag(["netns", "ls", "--tcp"]), /unknown option '--tcp'/);
  });

  test("a flag that needs a value and has none exits 2 and names it", async () => {
    assertUsage(await sockdiag(["ls", "-N"]), /-N/);
  });

  test("an unknown command or netns subcommand exits 2 and names it", async () => {
    assertUsage(await sockdiag(["lss"]), /unknown command "lss"/);
    assertUsage(await sockdiag(["netns", "lst"]), /unknown netns subcommand "lst"/);
  });

  test("an unknown state name exits 2 and names it, after state or exclude", async () => {
    assertUsage(await sockdiag(["ls", "state", "establshed"]), /"establshed".*unknown state/);
    assertUsage(await sockdiag(["ls", "-a", "exclude", "listenin"]), /"listenin".*unknown state/);
    assertUsage(await sockdiag(["ls", "state"]), /"state" needs a state name/);
  });

  test("a bad filter exits 2 quoting the offending word", async () => {
    assertUsage(await sockdiag(["ls", "dport", "=", ":http-nope"]), /http-nope/);
    assertUsage(await sockdiag(["ls", "dst", "300.1.2.3"]), /300\.1\.2\.3/);
    assertUsage(await sockdiag(["ls", "-t", "sport", "frobnicate", "5"]), /frobnicate/);
    assertUsage(await sockdiag(["ls", "(", "dport", "=", ":53"]), /\(|parenthes/);
  });

  test("a device the namespace lacks exits 2 naming it", async () => {
    assertUsage(await sockdiag(["ls", "-N", ns.name, "dev", "sdt-nodev0"]), /sdt-nodev0/);
  });

  test("-N with a path or a directory reference exits 2 before touching the file system", async () => {
    for (const bad of ["a/b", "..", ".", "../etc", ""]) {
      const r = await sockdiag(["ls", "-N", bad]);
      assertUsage(r, /invalid namespace name/);
      assert.ok(r.stderr.includes(JSON.stringify(bad)), `names ${JSON.stringify(bad)}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /open\(|ENOENT|stat\(/, "no file system call was made");
    }
  });

  test("-N with a name in invalid UTF-8 exits 2 naming -N, and opens no namespace", async () => {
    // The name the lossy decoding of the byte 0xff reads as: pinned, so that opening it would work.
    const base = netnsName("adv");
    const decoded = `${base}-\uFFFD`;
    await ipCommand("netns", "add", decoded);
    try {
      // bash's $'\xff' passes the byte as it is: the child's argv is not valid UTF-8.
      const r: CliResult = await promisify(execFile)(
        "bash",
        ["-c", `exec "$@" $'${base}-\\xff'`, "bash", process.execPath, CLI_MAIN, "ls", "-N"],
        { env: { ...process.env, SOCKDIAG_DEBUG: "" } },
      ).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      assertUsage(r, /-N\/--net: .*U\+FFFD/);
      assert.throws(() => listSockets({ netns: decoded }), InvalidNetnsNameError);
    } finally {
      await removeNetns(decoded);
    }
  });

  test("-N with a namespace that does not exist exits 2", async () => {
    const name = "sdt-does-not-exist";
    assert.equal(existsSync(`/run/netns/${name}`), false);
    assertUsage(await sockdiag(["ls", "-N", name]), new RegExp(`${name}.*(ENOENT|not found|no such)`, "i"));
    assertUsage(await sockdiag(["ls", "--netns", `/run/netns/${name}`]), /ENOENT|not found|no such/i);
  });

  test("a process or filter file that does not exist exits 2 naming it", async () => {
    assertUsage(await sockdiag(["ls", "--pid", "999999999"]), /999999999/);
    assertUsage(await sockdiag(["ls", "-F", "/nonexistent/sdt-filter"]), /"\/nonexistent\/sdt-filter"/);
  });

  test("a filter with unix, packet or netlink sockets named exits 2: filters select IP sockets only", async () => {
    assertUsage(await sockdiag(["ls", "-x", "dport", "=", ":53"]), /IP sockets only.*unix/);
    assertUsage(await sockdiag(["kill", "-u", "-x", "dst", "127.0.0.1:53"]), /IP sockets only.*unix/);
    assertUsage(await sockdiag(["ls", "-0", "dport", "=", ":53"]), /IP sockets only.*packet/);
    assertUsage(await sockdiag(["ls", "-A", "netlink", "dport", "=", ":53"]), /IP sockets only.*netlink/);
    assertUsage(await sockdiag(["ls", "-A", "unix", "-f", "link", "dport", "=", ":53"]), /IP sockets only/);
  });

  test("a filter read with -F is applied like one given as words", async () => {
    const r = await sockdiag(["ls", "-N", ns.name, "-F", "-", "-j"], { input: "dport = :53\n" });
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, "[]\n", ""]);
    assertUsage(await sockdiag(["ls", "-F", "-"], { input: "dport = :nope-port\n" }), /nope-port/);
  });

  test("conflicting namespace flags exit 2", async () => {
    assertUsage(await sockdiag(["ls", "-N", ns.name, "--all-netns"]), /choose one of/);
    assertUsage(await sockdiag(["ls", "--pid", "abc"]), /"abc"/);
    assertUsage(await sockdiag(["ls", "--netns-dir", "/run/netns"]), /--netns-dir goes with --all-netns/);
  });

  test("an unprivileged -N NAME exits 1 and says CAP_SYS_ADMIN is missing", async () => {
    const r = await sockdiag(["ls", "-N", ns.name], { unprivileged: true });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, new RegExp(`${ns.name}.*CAP_SYS_ADMIN`));
  });

  test("an unprivileged listing of its own namespace works: sock_diag dumps need no privilege", async () => {
    await using holder = await Holder.start();
    const [udp] = await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    const [unix] = await holder.open({
      kind: "unix",
      type: "stream",
      name: `\0sdt-${process.pid}-unpriv`,
      listen: true,
    });
    assert.ok(udp && unix);
    const r = await sockdiag(["ls", "-a", "-u", "-j", `src 127.0.0.1:${udp.sport}`], { unprivileged: true });
    assert.equal(r.code, 0, r.stderr);
    const got = JSON.parse(r.stdout) as JsonSocket[];
    assert.deepEqual(got.map(keyOf), [keyOf(udp)]);
    const all = await sockdiag(["ls", "-a", "-x", "-j"], { unprivileged: true });
    assert.equal(all.code, 0, all.stderr);
    assert.ok((JSON.parse(all.stdout) as JsonSocket[]).some((s) => keyOf(s) === keyOf(unix)));
  });

  test("a mark condition without CAP_NET_ADMIN (as root) is left to the predicate, not refused", async () => {
    await using holder = await Holder.start();
    const [udp] = await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    assert.ok(udp);
    // The kernel refuses a program with MARK_COND (EPERM) without CAP_NET_ADMIN, whatever the uid.
    const filter = `src 127.0.0.1:${udp.sport} and fwmark = 0x0`;
    const r = await sockdiag(["ls", "-a", "-u", "-j", filter], { unprivileged: true });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as JsonSocket[]).map(keyOf), [keyOf(udp)]);
    const none = await sockdiag(["ls", "-a", "-u", "-j", `src 127.0.0.1:${udp.sport} and fwmark = 0x1`], {
      unprivileged: true,
    });
    assert.equal(none.code, 0, none.stderr);
    assert.deepEqual(JSON.parse(none.stdout), []);
  });
});
