/**
 * One pass over every task's open files, on the real kernel, against sock_diag as the oracle: UDP
 * (and TCP when asked) sockets connected to the backends in the host and in namespaces the test
 * makes — IPv4, IPv6, v4-mapped, bound to a device, held by a process whose own namespace is
 * another (this one: it makes each socket inside its namespace and returns; a node that made its
 * socket in one namespace, then setns'd into another), held twice (by this process, which has
 * threads: each socket once a descriptor, not once a thread), handed to another process (`sleep`,
 * holding it as descriptor 3) — are found exactly, with the fields
 * sock_diag gives (`listSockets` and `ss -uaH -N` per namespace); sockets connected elsewhere are
 * not; nothing stays loaded or open. The same pass counts each namespace's held UDP sockets as
 * sockstat's `UDP: inuse` and `UDP6: inuse` count them: bound or connected ones, each once however
 * many descriptors and processes hold it, an unbound one or a raw one of protocol UDP not at all.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { statSync } from "node:fs";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { findConnectedSockets } from "../../src/bpf/find.js";
import type { FoundSocket } from "../../src/bpf/record.js";
import { inNetns } from "../../src/netns/enter.js";
import { fromPath } from "../../src/netns/open.js";
import { readSockstat } from "../../src/netns/sockstat.js";
import { listSockets } from "../../src/sockets/iterate.js";
import { takeDescriptor } from "../../src/sys/pidfd.js";
import {
  AF_INET,
  AF_INET6,
  bind,
  close,
  connect,
  IPPROTO_TCP,
  IPPROTO_UDP,
  listen,
  SOCK_DGRAM,
  SOCK_RAW,
  SOCK_STREAM,
  socket,
} from "../../src/sys/socket.js";
import {
  bpfFds,
  connectedUdpIn,
  describeAsRoot,
  loadedBpfSettled,
  type ScratchNetns,
  sockaddrIn,
  ss,
  withNetns,
} from "../kit/index.js";

const PORT = 20000 + (process.pid % 20000);
const V4 = "127.0.0.77";
const BACKENDS = [
  { address: V4, port: PORT },
  { address: "::1", port: PORT },
];

interface Made {
  fd: number;
  netns: number;
}

/** A socket made inside `path`'s namespace (the host's when undefined), connected to `address`:`port`. */
function udpIn(
  path: string | undefined,
  family: number,
  address: string,
  port: number,
  device?: string,
): Made {
  const fd = connectedUdpIn(path, family, address, port, device);
  return { fd, netns: statSync(path ?? "/proc/self/ns/net").ino };
}

const SYS = fileURLToPath(new URL("../../src/sys/index.js", import.meta.url));
const KIT = fileURLToPath(new URL("../kit/sockaddr.js", import.meta.url));

/**
 * A node started in namespace `name` that connects a UDP socket to the IPv4 backend there, then
 * moves its thread into the namespace at `then` (setns) and waits: its socket's local port, once
 * it has moved.
 */
async function movedProcess(name: string, then: string): Promise<{ child: ChildProcess; sport: number }> {
  const script = `
    const sys = await import(${JSON.stringify(SYS)});
    const { sockaddrIn } = await import(${JSON.stringify(KIT)});
    const { openSync } = await import("node:fs");
    const fd = sys.socket(sys.AF_INET, sys.SOCK_DGRAM, sys.IPPROTO_UDP);
    sys.connect(fd, sockaddrIn(${JSON.stringify(V4)}, ${PORT}));
    const name = Buffer.alloc(16);
    sys.getsockname(fd, name);
    sys.setns(openSync(${JSON.stringify(then)}, "r"), sys.CLONE_NEWNET);
    console.log(name.readUInt16BE(2));
    process.stdin.resume();`;
  const child = spawn("ip", ["netns", "exec", name, process.execPath, "--input-type=module", "-e", script], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const [line] = (await once(createInterface({ input: child.stdout as NodeJS.ReadableStream }), "line")) as [
    string,
  ];
  return { child, sport: Number(line) };
}

const key = (s: {
  netns: number;
  src: string;
  sport: number;
  dst: string;
  dport: number;
  cookie: bigint;
}): string => `${s.netns} ${s.src}:${s.sport} -> ${s.dst}:${s.dport} cookie ${s.cookie}`;

const isBackend = (dst: string, dport: number): boolean =>
  dport === PORT && (dst === V4 || dst === "::1" || dst === `::ffff:${V4}`);

describeAsRoot("one pass over every task's files", () => {
  test("finds the UDP sockets connected to the backends in every namespace, as sock_diag lists them", async () => {
    const fds: number[] = [];
    let sleeper: ChildProcess | undefined;
    let mover: { child: ChildProcess; sport: number } | undefined;
    try {
      await withNetns(3, async (nss: ScratchNetns[]) => {
        for (const ns of nss) await ns.ip("link", "set", "lo", "up");
        const [a, b, c] = nss as [ScratchNetns, ScratchNetns, ScratchNetns];
        const wanted: Made[] = [
          udpIn(undefined, AF_INET, V4, PORT),
          udpIn(undefined, AF_INET6, "::1", PORT),
          udpIn(a.path, AF_INET, V4, PORT),
          udpIn(a.path, AF_INET6, `::ffff:${V4}`, PORT),
          udpIn(b.path, AF_INET6, "::1", PORT),
          udpIn(b.path, AF_INET, V4, PORT, "lo"),
          udpIn(c.path, AF_INET, V4, PORT),
        ];
        const bystanders: Made[] = [
          udpIn(undefined, AF_INET, V4, PORT + 1),
          udpIn(a.path, AF_INET, "127.0.0.78", PORT),
          udpIn(b.path, AF_INET6, "::1", PORT + 1),
          udpIn(c.path, AF_INET6, `::ffff:127.0.0.78`, PORT),
        ];
        fds.push(...[...wanted, ...bystanders].map((m) => m.fd));
        // A TCP connection to a backend: found only when TCP is asked for.
        const tcp = inNetns(fromPath(c.path), () => {
          const listener = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
          bind(listener, sockaddrIn(V4, PORT));
          listen(listener, 4);
          const client = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
          connect(client, sockaddrIn(V4, PORT));
          return [listener, client] as const;
        });
        fds.push(...tcp);
        // A process that made its socket in b, then moved into c: the socket stays b's.
        mover = await movedProcess(b.name, c.path);
        // c's socket handed to another process: it alone holds it then.
        const handed = wanted[6] as Made;
        sleeper = spawn("sleep", ["600"], { stdio: ["ignore", "ignore", "ignore", handed.fd] });
        close(handed.fd);
        fds.splice(fds.indexOf(handed.fd), 1);
        // a's first socket held twice here: one socket, two records.
        fds.push(takeDescriptor(process.pid, (wanted[2] as Made).fd));

        const before = bpfFds();
        const { sockets, records, notes } = findConnectedSockets({ backends: BACKENDS });
        assert.deepEqual(bpfFds(), before, "no descriptor left open");
        assert.deepEqual(await loadedBpfSettled(), [], "nothing left loaded");
        assert.deepEqual(notes, []);
        assert.equal(records, sockets.length + 1, "the socket held twice gave two records, kept once");

        // The oracle: sock_diag in each namespace, after the pass (its cookies are the pass's).
        const namespaces = [undefined, a.path, b.path, c.path];
        const listed = namespaces.flatMap((path) =>
          listSockets({ ...(path ? { netns: path } : {}), protocols: ["udp"] })
            .filter((s) => isBackend(s.dst, s.dport))
            .map((s) => ({ ...s, netns: statSync(path ?? "/proc/self/ns/net").ino })),
        );
        assert.equal(listed.length, wanted.length + 1, "and the moved process's");
        assert.deepEqual(sockets.map(key).sort(), listed.map(key).sort());
        const byCookie = new Map<bigint, FoundSocket>(sockets.map((s) => [s.cookie, s]));
        for (const s of listed) {
          const found = byCookie.get(s.cookie) as FoundSocket;
          assert.equal(found.boundIfindex, s.ifindex ?? 0, key(s));
          assert.equal(found.inode, s.inode, key(s));
          assert.equal(found.family, s.family === "inet" ? AF_INET : AF_INET6, key(s));
          assert.equal(found.protocol, IPPROTO_UDP);
        }
        assert.equal(sockets.find((s) => s.boundIfindex !== 0)?.boundIfindex, 1, "bound to lo");
        const moved = sockets.find((s) => s.pid === mover?.child.pid);
        assert.equal(moved?.netns, statSync(b.path).ino, "the socket's own namespace, not its holder's");
        assert.equal(statSync(`/proc/${mover?.child.pid}/ns/net`).ino, statSync(c.path).ino);
        assert.equal(moved?.sport, mover?.sport);
        const handedFound = sockets.find((s) => s.netns === handed.netns && s.dst === V4);
        assert.equal(handedFound?.pid, sleeper.pid, "the only holder of the handed socket is sleep");
        assert.equal(handedFound?.fd, 3);

        // ss, per namespace, agrees on the tuples and cookies.
        for (const path of namespaces) {
          const rows = await ss(["-ua"], path ? { netns: nss.find((n) => n.path === path)?.name } : {});
          const netns = statSync(path ?? "/proc/self/ns/net").ino;
          const fromSs = rows
            .filter((r) => isBackend(r.dst, r.dport))
            .map((r) => key({ ...r, netns, cookie: BigInt(r.cookie ?? -1) }));
          assert.deepEqual(
            fromSs.sort(),
            sockets
              .filter((s) => s.netns === netns)
              .map(key)
              .sort(),
            path ?? "host",
          );
        }

        // Backends on 70 ports, beyond what the program compares inline: the map alone decides.
        const many = Array.from({ length: 70 }, (_, i) => ({ address: "127.0.0.79", port: 1000 + i }));
        const byMap = findConnectedSockets({ backends: [...many, ...BACKENDS] });
        assert.deepEqual(byMap.sockets.map(key).sort(), sockets.map(key).sort());

        // With TCP asked for, the TCP client is found too; its listener is not (no destination).
        const both = findConnectedSockets({ backends: BACKENDS, protocols: ["udp", "tcp"] });
        const tcpFound = both.sockets.filter((s) => s.protocol === IPPROTO_TCP);
        assert.equal(tcpFound.length, 1);
        assert.equal(tcpFound[0]?.netns, statSync(c.path).ino);
        assert.equal(both.sockets.length, sockets.length + 1);
        // Their cookies, read in the kernel this time (sock_diag made them), are the first pass's.
        assert.deepEqual(
          both.sockets
            .filter((s) => s.protocol === IPPROTO_UDP)
            .map(key)
            .sort(),
          sockets.map(key).sort(),
        );
        assert.deepEqual(await loadedBpfSettled(), []);
      });
    } finally {
      for (const fd of fds) close(fd);
      if (sleeper?.pid !== undefined) process.kill(sleeper.pid, "SIGKILL");
      if (mover?.child.pid !== undefined) process.kill(mover.child.pid, "SIGKILL");
    }
  });

  test("counts each namespace's held UDP sockets once, as sockstat's inuse counts them", async () => {
    const fds: number[] = [];
    let sleeper: ChildProcess | undefined;
    try {
      await withNetns(2, async (nss: ScratchNetns[]) => {
        const [a, b] = nss as [ScratchNetns, ScratchNetns];
        await a.ip("link", "set", "lo", "up");
        const inA = <T>(fn: () => T): T => {
          const ns = fromPath(a.path);
          try {
            return inNetns(ns, fn);
          } finally {
            ns.close();
          }
        };
        const v4 = [0, 1, 2].map((i) => udpIn(a.path, AF_INET, V4, PORT + i).fd);
        const v6 = [0, 1].map((i) => udpIn(a.path, AF_INET6, "::1", PORT + i).fd);
        // Never bound nor connected: not hashed, not in inuse.
        const unbound = inA(() => socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP));
        // Raw ones of protocol UDP: their local port field holds the protocol, but sockstat counts
        // them as RAW.
        const raw = [AF_INET, AF_INET6].map((family) => inA(() => socket(family, SOCK_RAW, IPPROTO_UDP)));
        fds.push(...v4, ...v6, unbound, ...raw);
        // Held twice here, and by another process too.
        fds.push(takeDescriptor(process.pid, v4[0] as number));
        sleeper = spawn("sleep", ["600"], { stdio: ["ignore", "ignore", "ignore", v4[1] as number] });

        const { held, seenAgain } = findConnectedSockets({ backends: BACKENDS });
        assert.deepEqual(held.get(statSync(a.path).ino), { v4: 3, v6: 2 });
        // The program for TCP too reads every socket, not only datagram ones: the same count.
        const withTcp = findConnectedSockets({ backends: BACKENDS, protocols: ["udp", "tcp"] }).held;
        assert.deepEqual(withTcp.get(statSync(a.path).ino), { v4: 3, v6: 2 });
        const counts = inA(readSockstat);
        assert.deepEqual([counts.get("UDP"), counts.get("UDP6")], [3, 2], "sockstat counts the same");
        assert.equal(held.get(statSync(b.path).ino), undefined, "a namespace with none");
        // Closed after the pass (held nowhere else): its second look does not see it again.
        close(fds.splice(fds.indexOf(v4[2] as number), 1)[0] as number);
        const again = seenAgain();
        assert.deepEqual(
          again.get(statSync(a.path).ino),
          { v4: 2, v6: 2 },
          "each socket once, the closed one not",
        );
        assert.throws(() => seenAgain(), { name: "MisuseError" });
        assert.deepEqual(await loadedBpfSettled(), []);
      });
    } finally {
      for (const fd of fds) close(fd);
      if (sleeper?.pid !== undefined) process.kill(sleeper.pid, "SIGKILL");
    }
  });

  test("bad backends or protocols are a QueryError naming them, before anything is loaded", async () => {
    assert.throws(() => findConnectedSockets({ backends: [{ address: "10.0.0.300", port: 53 }] }), {
      name: "QueryError",
      message: /10\.0\.0\.300/,
    });
    assert.throws(() => findConnectedSockets({ backends: [{ address: "10.0.0.1", port: 0 }] }), {
      name: "QueryError",
      message: /port/,
    });
    assert.throws(() => findConnectedSockets({ backends: BACKENDS, protocols: ["sctp" as "udp"] }), {
      name: "QueryError",
      message: /sctp/,
    });
    assert.deepEqual(await loadedBpfSettled(), []);
  });
});
