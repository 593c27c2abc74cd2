/**
 * A namespace's counters read through a process in it, without entering it (/proc/PID/net/):
 * UDP sockets by sockstat and sockstat6, conntrack entries by stat/nf_conntrack. The oracles:
 * the sockets and entries the test made there, and the same counters read from inside
 * (readSockstat, the nf_conntrack_count sysctl). A process gone is a SysError. Counters kept open
 * (HeldSockstat) read again from outside the namespace show it as it is then, and close.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, statSync } from "node:fs";
import { test } from "node:test";
import { inNetns, runIn } from "../../src/netns/enter.js";
import { fromPath } from "../../src/netns/open.js";
import {
  conntrackEntries,
  conntrackEntriesOf,
  HeldSockstat,
  readSockstat,
} from "../../src/netns/sockstat.js";
import { AF_INET, AF_INET6, bind, close, IPPROTO_UDP, SOCK_DGRAM, socket } from "../../src/sys/socket.js";
import {
  describeAsRoot,
  insertConntrack,
  type ScratchNetns,
  sockaddrIn,
  sockaddrIn6,
  withNetns,
} from "../kit/index.js";

/** The counters of the namespace process `pid` is in, through its /proc/PID/net/. */
function countsOf(pid: number) {
  using held = new HeldSockstat(pid);
  return held.read();
}

/** A `sleep` inside `ns`, once it is there. */
async function sleeperIn(ns: ScratchNetns): Promise<ChildProcess> {
  const child = spawn("ip", ["netns", "exec", ns.name, "sleep", "600"], { stdio: "ignore" });
  const want = statSync(ns.path).ino;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if (statSync(`/proc/${child.pid}/ns/net`).ino === want) return child;
    } catch {
      // not started yet
    }
    assert.ok(Date.now() < deadline, `sleep never entered ${ns.name}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describeAsRoot("a namespace's counters, read without entering it", () => {
  test("UDP in use (sockstat, sockstat6) and conntrack entries, as made and as read inside", async () => {
    await withNetns(2, async ([a, b]) => {
      const [nsA, nsB] = [a as ScratchNetns, b as ScratchNetns];
      const sleepers = [await sleeperIn(nsA), await sleeperIn(nsB)];
      const fds: number[] = [];
      try {
        // Held by this process, which is not in a: they count in a's counters all the same. Only
        // a bound socket counts ("inuse" counts hashed sockets; a connected one is bound).
        using handle = fromPath(nsA.path);
        const bound = (family: number): number => {
          const fd = socket(family, SOCK_DGRAM, IPPROTO_UDP);
          bind(fd, family === AF_INET ? sockaddrIn("0.0.0.0", 0) : sockaddrIn6("::", 0));
          return fd;
        };
        inNetns(handle, () => {
          for (let i = 0; i < 5; i++) fds.push(bound(AF_INET));
          for (let i = 0; i < 3; i++) fds.push(bound(AF_INET6));
          fds.push(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP));
        });
        insertConntrack(nsA.path, [
          { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1000, dport: 53 } },
          { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1001, dport: 53 } },
          { proto: 6, orig: { src: "10.1.0.1", dst: "10.1.0.3", sport: 1002, dport: 80 } },
        ]);
        const [pidA, pidB] = sleepers.map((s) => s.pid as number) as [number, number];

        const countsA = countsOf(pidA);
        assert.equal(countsA.get("UDP"), 5);
        assert.equal(countsA.get("UDP6"), 3);
        assert.deepEqual(countsA, runIn(handle, readSockstat));
        assert.equal(countsOf(pidB).get("UDP"), 0);
        assert.equal(countsOf(pidB).get("UDP6"), 0);

        assert.equal(conntrackEntriesOf(pidA), 3);
        assert.equal(conntrackEntriesOf(pidA), runIn(handle, conntrackEntries));
        assert.equal(conntrackEntriesOf(pidB), 0);
      } finally {
        for (const fd of fds) close(fd);
        for (const s of sleepers) {
          const exited = once(s, "exit");
          s.kill("SIGKILL");
          await exited;
        }
      }
      const gone = sleepers[0]?.pid as number;
      assert.throws(() => countsOf(gone), { name: "SysError", code: "ENOENT" });
      assert.throws(() => conntrackEntriesOf(gone), { name: "SysError", code: "ENOENT" });
    });
  });

  test("a conntrack count kept open: read again from outside, it is the namespace's as it is then", async () => {
    await withNetns(1, async ([scratch]) => {
      const ns = scratch as ScratchNetns;
      using handle = fromPath(ns.path);
      const fdsBefore = readdirSync("/proc/self/fd").length;
      const held = inNetns(handle, () => new HeldSockstat(undefined, { conntrack: true }));
      try {
        assert.equal(held.conntrackEntries(), 0);
        insertConntrack(ns.path, [
          { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1000, dport: 53 } },
          { proto: 17, orig: { src: "10.1.0.1", dst: "10.1.0.2", sport: 1001, dport: 53 } },
        ]);
        // Read from the caller's own namespace: the scratch namespace's count, not the caller's.
        assert.equal(held.conntrackEntries(), 2);
        assert.equal(held.conntrackEntries(), runIn(handle, conntrackEntries));
      } finally {
        held.close();
      }
      assert.equal(readdirSync("/proc/self/fd").length, fdsBefore);
      assert.throws(() => held.conntrackEntries(), /not held/);
      using plain = new HeldSockstat();
      assert.throws(() => plain.conntrackEntries(), /not held/, "only held when asked for");
    });
  });

  test("counters kept open: read again from outside, they show the namespace as it is then", async () => {
    await withNetns(1, async ([scratch]) => {
      using handle = fromPath((scratch as ScratchNetns).path);
      const fds: number[] = [];
      const fdsBefore = readdirSync("/proc/self/fd").length;
      const held = inNetns(handle, () => new HeldSockstat());
      try {
        assert.equal(held.read().get("UDP"), 0);
        inNetns(handle, () => {
          for (let i = 0; i < 2; i++) {
            const fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
            fds.push(fd);
            bind(fd, sockaddrIn("0.0.0.0", 0));
          }
          const fd = socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDP);
          fds.push(fd);
          bind(fd, sockaddrIn6("::", 0));
        });
        // Read from the caller's own namespace: a's counters, not the caller's.
        const again = held.read();
        assert.equal(again.get("UDP"), 2);
        assert.equal(again.get("UDP6"), 1);
        assert.deepEqual(again, runIn(handle, readSockstat));
        close(fds.pop()!);
        assert.equal(held.read().get("UDP6"), 0);
      } finally {
        held.close();
        for (const fd of fds) close(fd);
      }
      assert.equal(readdirSync("/proc/self/fd").length, fdsBefore);
      assert.throws(() => held.read(), /after close/);
    });
  });
});
