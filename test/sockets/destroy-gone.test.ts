/**
 * Sockets that change between the dump and the destroy: closed ones count as `gone` (ENOENT), not
 * failed, and a new socket that reuses a listed socket's 4-tuple is never destroyed in its place
 * (the request carries the cookie). The test process holds these sockets itself, opened inside the
 * namespace with src/sys through runIn, because the predicate that closes them is synchronous.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fromName, type NetNS, runIn } from "../../src/netns/index.js";
import { destroySocket, destroySockets, listSockets } from "../../src/sockets/index.js";
import {
  AF_INET,
  bind,
  close,
  connect,
  Errno,
  getsockname,
  MSG_DONTWAIT,
  recvErrno,
  SOCK_DGRAM,
  SOL_SOCKET,
  sendto,
  setsockoptInt,
  socket,
  socketCookie,
} from "../../src/sys/index.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type ScratchNetns,
  sockaddrIn,
} from "../kit/index.js";

/** SO_REUSEADDR from asm-generic/socket.h (src/sys does not export it). */
const SO_REUSEADDR = 2;

describeAsRoot("destroy races: gone sockets and reused addresses", () => {
  let ns: ScratchNetns;
  let handle: NetNS;
  /** Every descriptor this file opened and has not closed yet. */
  const open = new Set<number>();
  let receiverPort: number;

  /** A UDP socket created inside the namespace (the thread does not stay there). */
  function udpSocket(reuseAddr = false): number {
    const fd = runIn(handle, () => socket(AF_INET, SOCK_DGRAM, 0));
    open.add(fd);
    if (reuseAddr) setsockoptInt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    return fd;
  }
  function closeFd(fd: number): void {
    open.delete(fd);
    close(fd);
  }
  function localPort(fd: number): number {
    const addr = Buffer.alloc(16);
    getsockname(fd, addr);
    return addr.readUInt16BE(2);
  }
  /** A client bound to 127.0.0.1:`port` (0: ephemeral), connected to the receiver. */
  function client(port = 0, reuseAddr = false): number {
    const fd = udpSocket(reuseAddr);
    bind(fd, sockaddrIn("127.0.0.1", port));
    connect(fd, sockaddrIn("127.0.0.1", receiverPort));
    return fd;
  }
  const pending = (fd: number) => -recvErrno(fd, Buffer.alloc(1), MSG_DONTWAIT);

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("gone");
    handle = fromName(ns.name);
    const rx = udpSocket();
    bind(rx, sockaddrIn("127.0.0.1", 0));
    receiverPort = localPort(rx);
  });

  after(async () => {
    for (const fd of open) close(fd);
    handle?.close();
    await ns?.remove();
  });

  test("sockets closed by the predicate, after the dump found them, count as gone, not failed", () => {
    const fds = Array.from({ length: 8 }, () => client());
    const fdByCookie = new Map(fds.map((fd) => [socketCookie(fd), fd]));
    const closed = new Set<number>();
    let seen = 0;

    const report = destroySockets({
      netns: ns.name,
      protocols: ["udp"],
      states: ["established"],
      filter: `dst 127.0.0.1:${receiverPort}`,
      predicate: (s) => {
        const fd = fdByCookie.get(s.cookie);
        assert.ok(fd !== undefined, `a socket of this test: ${s.cookie}`);
        // Every other candidate, the first included (it is destroyed alone, before the others).
        if (seen++ % 2 === 0) {
          closeFd(fd);
          closed.add(fd);
        }
        return true;
      },
    });

    assert.equal(seen, fds.length);
    assert.equal(closed.size, 4);
    assert.deepEqual(
      [report.matched, report.gone, report.destroyed, report.failed, report.skipped],
      [8, closed.size, fds.length - closed.size, [], 0],
    );
    for (const fd of fds.filter((fd) => !closed.has(fd))) {
      assert.equal(pending(fd), Errno.ECONNABORTED, `fd ${fd} was destroyed`);
      closeFd(fd);
    }
  });

  test("a destroy never touches a new socket that reuses the listed socket's 4-tuple", () => {
    const first = client(0, true);
    const port = localPort(first);
    const byPort = () => listSockets({ netns: ns.name, protocols: ["udp"], filter: `sport = :${port}` });
    const [old] = byPort();
    assert.ok(old);
    assert.equal(old.cookie, socketCookie(first));
    closeFd(first);

    const second = client(port, true);
    const [reused] = byPort();
    assert.ok(reused);
    assert.deepEqual(
      [reused.src, reused.sport, reused.dst, reused.dport],
      [old.src, old.sport, old.dst, old.dport],
      "same 4-tuple",
    );
    assert.notEqual(reused.cookie, old.cookie);

    assert.equal(destroySocket(old, handle), "gone");
    assert.equal(pending(second), Errno.EAGAIN, "the new socket is alive");
    assert.equal(sendto(second, Buffer.from("x"), 1, MSG_DONTWAIT, null), 1);

    // The same call with the new socket's id does destroy it: the check above can fail.
    assert.equal(destroySocket(reused, handle), "destroyed");
    assert.equal(pending(second), Errno.ECONNABORTED);
    closeFd(second);
  });
});
