/**
 * The netlink layer against the real kernel, in this process's network namespace (sock_diag dumps
 * need no privilege; the destroy batch needs CAP_NET_ADMIN). Requests are built with the independent
 * test builder (test/diag/layout.ts), so only NetlinkSocket, DumpCursor and collectAcks are under test.
 * Sockets are bound to 127.0.0.1 only and no datagram is sent.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  collectAcks,
  DumpCursor,
  type NetlinkConnection,
  NetlinkError,
  NetlinkProtocolError,
  NetlinkSocket,
  NetlinkTimeoutError,
} from "../../src/netlink/index.js";
import { Errno, MisuseError } from "../../src/sys/errors.js";
import {
  AF_INET,
  bind,
  close,
  connect,
  getsockname,
  getsockoptInt,
  MSG_DONTWAIT,
  recvErrno,
  SO_RCVBUF,
  SO_SNDBUF,
  SOCK_DGRAM,
  SOL_SOCKET,
  socket,
  socketCookie,
} from "../../src/sys/socket.js";
import { INET_DIAG_REQ_V2, nlmsg, pack, type Values } from "../diag/layout.js";
import { CountingConnection } from "../kit/fake-netlink.js";
import { sockaddrIn } from "../kit/sockaddr.js";

const NETLINK_SOCK_DIAG = 4;
const IPPROTO_UDP = 17;
const SOCKETS = 3000;

/** SOCK_DIAG_BY_FAMILY dump request (NLM_F_REQUEST|NLM_F_DUMP) for every state of family/protocol. */
function dumpRequest(seq: number, family: number, protocol: number): Buffer {
  const req = { sdiag_family: family, sdiag_protocol: protocol, idiag_states: 0xffffffff };
  return nlmsg({ type: 20, flags: 0x301, seq }, pack(INET_DIAG_REQ_V2, req));
}

/** Send a UDP/IPv4 dump on `conn` and return its cursor. */
function dumpUdp(conn: NetlinkConnection): DumpCursor {
  const seq = conn.nextSeq();
  const req = dumpRequest(seq, AF_INET, IPPROTO_UDP);
  conn.send(req, req.length);
  return new DumpCursor(conn, seq, "dump udp");
}

/** The cookie of the inet_diag_msg under the cursor (id.idiag_cookie at payload byte 44, low word first). */
const cookieOf = (c: DumpCursor) => c.buf.readBigUInt64LE(c.offset + 44);

function localPort(fd: number): number {
  const b = Buffer.alloc(16);
  getsockname(fd, b);
  return b.readUInt16BE(2);
}

describe("NetlinkSocket, DumpCursor and collectAcks against the kernel", () => {
  const fds: number[] = [];
  const cookies = new Set<bigint>();
  let conn: NetlinkSocket;

  before(() => {
    for (let i = 0; i < SOCKETS; i++) {
      const fd = socket(AF_INET, SOCK_DGRAM, 0);
      fds.push(fd);
      bind(fd, sockaddrIn("127.0.0.1", 0));
      cookies.add(socketCookie(fd));
    }
    conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
  });

  after(() => {
    conn?.close();
    for (const fd of fds.splice(0)) close(fd);
  });

  test(`a dump of ${SOCKETS}+ sockets spans several receives and returns every one`, () => {
    const counted = new CountingConnection(conn);
    const seen = new Set<bigint>();
    const cursor = dumpUdp(counted);
    let messages = 0;
    while (cursor.next()) {
      assert.equal(cursor.type, 20, "SOCK_DIAG_BY_FAMILY");
      assert.ok(cursor.length >= 72, "holds an inet_diag_msg");
      messages++;
      seen.add(cookieOf(cursor));
    }
    assert.equal(seen.size, messages, "no socket twice");
    const missing = [...cookies].filter((c) => !seen.has(c));
    assert.deepEqual(missing, [], `${missing.length} of our ${SOCKETS} sockets missing`);
    assert.ok(counted.receives > 3, `${counted.receives} receives`);
    assert.equal(cursor.next(), false, "a finished cursor stays finished");
  });

  describe("an error answer raises NetlinkError and does not hang", () => {
    for (const [what, family, protocol] of [
      ["family AF_UNSPEC", 0, IPPROTO_UDP],
      ["protocol 253, which no inet_diag handler serves", AF_INET, 253],
    ] as const) {
      test(what, () => {
        const seq = conn.nextSeq();
        const req = dumpRequest(seq, family, protocol);
        conn.send(req, req.length);
        const cursor = new DumpCursor(conn, seq, "dump");
        assert.throws(
          () => cursor.next(),
          (err: unknown) =>
            err instanceof NetlinkError &&
            err.errno === Errno.ENOENT &&
            err.code === "ENOENT" &&
            err.seq === seq,
        );
        assert.equal(cursor.next(), false, "the answer is over after the error");
        let n = 0;
        const again = dumpUdp(conn);
        while (again.next()) n++;
        assert.ok(n >= SOCKETS, "the same socket serves the next dump");
      });
    }
  });

  test("a cursor closed early drains its answer, so the next dump on the socket is whole", () => {
    const first = dumpUdp(conn);
    assert.ok(first.next());
    first.close();
    const seen = new Set<bigint>();
    const second = dumpUdp(conn);
    while (second.next()) seen.add(cookieOf(second));
    assert.equal([...cookies].filter((c) => !seen.has(c)).length, 0);
  });

  test("leaving a `using` block mid-dump drains too", () => {
    {
      using cursor = dumpUdp(conn);
      assert.ok(cursor.next());
    }
    let n = 0;
    const next = dumpUdp(conn);
    while (next.next()) n++;
    assert.ok(n >= SOCKETS);
  });

  test("a receive buffer smaller than a dump chunk is a NetlinkProtocolError, not lost data", () => {
    using small = NetlinkSocket.open(NETLINK_SOCK_DIAG, { receiveBufferBytes: 256 });
    const cursor = dumpUdp(small);
    assert.throws(
      () => {
        while (cursor.next()) {
          // read on until the first chunk that does not fit
        }
      },
      (err: unknown) => err instanceof NetlinkProtocolError && /truncated to 256 bytes/.test(err.message),
    );
  });

  test("receive() with nothing pending ends with NetlinkTimeoutError", () => {
    using idle = NetlinkSocket.open(NETLINK_SOCK_DIAG, { receiveTimeoutMs: 200 });
    assert.throws(
      () => idle.receive("idle"),
      (err: unknown) =>
        err instanceof NetlinkTimeoutError && err.timeoutMs === 200 && /idle/.test(err.message),
    );
  });

  test("dumps sent in the background keep coming for a caller that never lets the event loop run", () => {
    // A synchronous caller (the CLI, a sync terminate over hundreds of namespaces) never runs the
    // completions of what it handed to another thread: nothing may wait for them to be freed.
    using c = NetlinkSocket.open(NETLINK_SOCK_DIAG, { receiveTimeoutMs: 2000 });
    // Past koffi's 256 asynchronous calls, and often enough to meet the kernel's spurious EINVAL
    // (see NetlinkSocket.receive) a few times.
    for (let i = 0; i < 1000; i++) {
      const seq = c.nextSeq();
      // No state asked: the kernel walks the table and answers NLMSG_DONE alone.
      const req = nlmsg(
        { type: 20, flags: 0x301, seq },
        pack(INET_DIAG_REQ_V2, { sdiag_family: AF_INET, sdiag_protocol: IPPROTO_UDP, idiag_states: 0 }),
      );
      c.sendInBackground(req, req.length);
      const cursor = new DumpCursor(c, seq, "dump in the background");
      // Fails by throwing: koffi's refusal, a receive timing out, the kernel's EINVAL.
      while (cursor.next()) assert.fail(`dump ${i}: no socket is in no state`);
    }
  });

  test("a write longer than any socket's send buffer as opened goes through, foreground and background", () => {
    // The socket raises its send buffer only for such a write: the kernel refuses (EMSGSIZE) one
    // longer than the buffer less 32 bytes, which starts at net.core.wmem_default.
    const start = Number(readFileSync("/proc/sys/net/core/wmem_default", "utf8"));
    using c = NetlinkSocket.open(NETLINK_SOCK_DIAG, { receiveTimeoutMs: 2000 });
    assert.equal(getsockoptInt(c.fd, SOL_SOCKET, SO_SNDBUF), start, "left as it was opened");
    // The queue it reports is what the kernel holds (it doubles the size asked, for its bookkeeping).
    assert.equal(c.receiveQueueBytes, getsockoptInt(c.fd, SOL_SOCKET, SO_RCVBUF) >> 1);
    for (const background of [false, true]) {
      // NLMSG_NOOPs the kernel skips unanswered, then one that asks for an ack: the barrier.
      const noops = Math.ceil((start + 4096) / 16);
      const parts = Array.from({ length: noops }, () => nlmsg({ type: 1, flags: 1, seq: 0 }));
      const barrier = c.nextSeq();
      parts.push(nlmsg({ type: 1, flags: 5, seq: barrier }));
      const write = Buffer.concat(parts);
      assert.ok(write.length > start);
      if (background) c.sendInBackground(write, write.length);
      else c.send(write, write.length);
      const acks: number[] = [];
      collectAcks(c, barrier, 1, "long write", (_, errno) => acks.push(errno));
      assert.deepEqual(acks, [0], background ? "in the background" : "in the foreground");
    }
  });

  test("a closed socket refuses send and receive; close is idempotent", () => {
    const c = NetlinkSocket.open(NETLINK_SOCK_DIAG);
    c.close();
    c.close();
    assert.throws(() => c.receive("late"), MisuseError);
    assert.throws(() => c.send(Buffer.alloc(16), 16), MisuseError);
  });

  test("collectAcks matches a batch of SOCK_DESTROY acks by sequence number", (t) => {
    if (process.getuid?.() !== 0) {
      if (process.env.CI === "true")
        assert.fail("SOCK_DESTROY needs CAP_NET_ADMIN: run the tests as root in CI");
      t.skip("SKIPPED: SOCK_DESTROY needs CAP_NET_ADMIN (run as root)");
      return;
    }
    const peer = socket(AF_INET, SOCK_DGRAM, 0);
    const victim = socket(AF_INET, SOCK_DGRAM, 0);
    try {
      bind(peer, sockaddrIn("127.0.0.1", 0));
      bind(victim, sockaddrIn("127.0.0.1", 0));
      connect(victim, sockaddrIn("127.0.0.1", localPort(peer)));
      const cookie = socketCookie(victim);
      const id = (c: bigint): Values => ({
        sdiag_family: AF_INET,
        sdiag_protocol: IPPROTO_UDP,
        "id.idiag_sport": localPort(victim),
        "id.idiag_dport": localPort(peer),
        "id.idiag_src[0]": 0x7f000001,
        "id.idiag_dst[0]": 0x7f000001,
        "id.idiag_cookie[0]": Number(c & 0xffffffffn),
        "id.idiag_cookie[1]": Number(c >> 32n),
      });
      const destroy = (seq: number, c: bigint) =>
        nlmsg({ type: 21, flags: 5, seq }, pack(INET_DIAG_REQ_V2, id(c)));
      // Unique bogus cookies (no real socket has one this high) for the victim's own address: the
      // kernel must refuse each with ENOENT and leave it alive. The right cookie sits in the middle.
      const bogus = (i: number) => 0xdead_0000_0000_0000n + BigInt(process.pid) * 256n + BigInt(i);
      const stray = conn.nextSeq(); // acked first, and not part of the batch collectAcks waits for
      const seqs = [0, 1, 2, 3, 4].map(() => conn.nextSeq());
      const batch = Buffer.concat([
        destroy(stray, bogus(9)),
        ...seqs.map((seq, i) => destroy(seq, i === 2 ? cookie : bogus(i))),
      ]);
      conn.send(batch, batch.length);
      const acks: [number, number][] = [];
      collectAcks(conn, seqs[0]!, seqs.length, "destroy", (index, errno) => acks.push([index, errno]));
      assert.deepEqual(acks, [
        [0, Errno.ENOENT],
        [1, Errno.ENOENT],
        [2, 0],
        [3, Errno.ENOENT],
        [4, Errno.ENOENT],
      ]);
      assert.equal(
        recvErrno(victim, Buffer.alloc(16), MSG_DONTWAIT),
        -Errno.ECONNABORTED,
        "the right cookie destroyed it",
      );
      let n = 0;
      const next = dumpUdp(conn);
      while (next.next()) n++;
      assert.ok(n >= SOCKETS, "no ack was left behind to confuse the next request");
    } finally {
      close(victim);
      close(peer);
    }
  });
});
