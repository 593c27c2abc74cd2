/**
 * The destroy batcher over a fake connection, without root: the bytes it writes (errors-only
 * SOCK_DESTROY requests and a NOOP barrier, checked against the independent test builder), which
 * socket each failure is charged to, the probe that sends each protocol's first request alone, and
 * what a batch becomes when its answers time out, overflow (ENOBUFS) or come back malformed. The
 * kernel's own answers are checked in destroy.test.ts and destroy-gone.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeInetDiagMsg } from "../../src/diag/inet.js";
import { type InetSocket, type Socket, TipcSocket, VsockSocket, XdpSocket } from "../../src/diag/socket.js";
import { Destroyer } from "../../src/sockets/destroyer.js";
import { Errno } from "../../src/sys/errors.js";
import { INET_DIAG_MSG, INET_DIAG_REQ_V2, NLMSGHDR, nlmsg, pack } from "../diag/layout.js";
import {
  enobufs,
  errorsOnly,
  FakeNetlink,
  type FakeNetlinkOptions,
  type SentMessage,
  splitMessages,
} from "../kit/fake-netlink.js";

const SOCK_DESTROY = 21;
const NLMSG_NOOP = 1;
const IPPROTO = { tcp: 6, udp: 17 } as const;

/** A socket as a dump would list it: UDP 10.0.0.1:(5000+i) -> 10.0.0.9:53, cookie 0x1_0000_0000 + i. */
function listed(i: number, protocol: "udp" | "tcp" = "udp"): InetSocket {
  const msg = pack(INET_DIAG_MSG, {
    idiag_family: 2,
    idiag_state: 1,
    "id.idiag_sport": 5000 + i,
    "id.idiag_dport": 53,
    "id.idiag_src[0]": 0x0a000001,
    "id.idiag_dst[0]": 0x0a000009,
    "id.idiag_if": 3,
    "id.idiag_cookie[0]": i,
    "id.idiag_cookie[1]": 1,
  });
  return decodeInetDiagMsg(msg, 0, msg.length, { protocol, attributes: false });
}

/** The SOCK_DESTROY request for listed(i), built field by field: errors-only (NLM_F_REQUEST alone). */
function expectedRequest(seq: number, i: number, protocol: "udp" | "tcp" = "udp"): Buffer {
  const req = pack(INET_DIAG_REQ_V2, {
    sdiag_family: 2,
    sdiag_protocol: IPPROTO[protocol],
    "id.idiag_sport": 5000 + i,
    "id.idiag_dport": 53,
    "id.idiag_src[0]": 0x0a000001,
    "id.idiag_dst[0]": 0x0a000009,
    "id.idiag_if": 3,
    "id.idiag_cookie[0]": i,
    "id.idiag_cookie[1]": 1,
  });
  return nlmsg({ type: SOCK_DESTROY, flags: 0x1, seq }, req);
}

const barrier = (seq: number) =>
  pack(NLMSGHDR, { nlmsg_len: 16, nlmsg_type: NLMSG_NOOP, nlmsg_flags: 5, nlmsg_seq: seq });

/** Which listed(i) a socket is. */
const indexOf = (s: Socket) => (s as InetSocket).sport - 5000;

/** The sport of the socket a sent SOCK_DESTROY names (sockid starts at payload byte 8). */
const sportOf = (m: SentMessage) => m.payload.readUInt16BE(8);

/** A fake answering each destroy with the errno `errnoOf` gives its socket's index (sport - 5000). */
function kernel(errnoOf: (i: number) => number, options: FakeNetlinkOptions = {}): FakeNetlink {
  return new FakeNetlink({
    respond: errorsOnly((m) => (m.type === SOCK_DESTROY ? errnoOf(sportOf(m) - 5000) : 0)),
    ...options,
  });
}

/**
 * Destroy `sockets` through a Destroyer; `listedAgain` is what a fresh listing holds when the
 * ENOENT answers are checked (default: none of them, so ENOENT means gone).
 */
function destroyAll(
  conn: FakeNetlink,
  sockets: InetSocket[],
  batchSize = 512,
  listedAgain: () => readonly InetSocket[] = () => [],
) {
  const outcomes: [number, string][] = [];
  const d = new Destroyer(() => conn, conn.receiveQueueBytes, {
    batchSize,
    onOutcome: (s, o) => outcomes.push([indexOf(s), o]),
  });
  let thrown: unknown;
  try {
    for (const s of sockets) d.add(s);
    d.flush(conn);
    d.settle(conn, (sink) => {
      for (const s of listedAgain()) sink(s);
    });
  } catch (err) {
    thrown = err;
  }
  const r = d.report;
  assert.equal(r.matched, r.destroyed + r.gone + r.failed.length + r.skipped, "the report balances");
  return { report: r, outcomes, thrown };
}

test("the bytes sent: a probe request alone, then the rest in one write, each errors-only, each write ending in a NOOP barrier", () => {
  const conn = kernel(() => 0);
  const { report } = destroyAll(
    conn,
    [0, 1, 2].map((i) => listed(i)),
  );
  assert.equal(report.destroyed, 3);
  assert.deepEqual(conn.writes, [
    Buffer.concat([expectedRequest(1001, 0), barrier(1002)]),
    Buffer.concat([expectedRequest(1003, 1), expectedRequest(1004, 2), barrier(1005)]),
  ]);
});

test("each failure answered is charged to the socket it names, in a batch where most succeed", () => {
  const fails: Record<number, number> = { 3: Errno.ENOENT, 4: Errno.EBUSY, 9: Errno.ENOENT };
  const conn = kernel((i) => fails[i] ?? 0, { messagesPerReceive: 1 });
  const { report, outcomes } = destroyAll(
    conn,
    Array.from({ length: 12 }, (_, i) => listed(i)),
  );
  assert.deepEqual(
    outcomes.filter(([, o]) => o !== "destroyed"),
    // ENOENT is only known to mean gone once a listing is checked, after the last batch.
    [
      [4, "failed"],
      [3, "gone"],
      [9, "gone"],
    ],
  );
  assert.equal(report.destroyed, 9);
  assert.deepEqual(
    report.failed.map((f) => [indexOf(f.socket), f.code]),
    [[4, "EBUSY"]],
  );
});

test("an ENOENT answer for a socket still listed is sent again; one that never makes way fails", () => {
  // 1 and 2 share a 4-tuple with 0: the lookup finds 0 first, then 1 once 0 is gone; 3 is closed.
  // 5 stays shadowed by a socket this run never destroys.
  const alive = new Set([0, 1, 2, 3, 4, 5]);
  alive.delete(3);
  const first = (i: number) => (i === 1 || i === 2 ? Math.min(...[0, 1, 2].filter((j) => alive.has(j))) : i);
  const conn = kernel((i) => {
    if (!alive.has(i) || first(i) !== i || i === 5) return Errno.ENOENT;
    alive.delete(i);
    return 0;
  });
  const sockets = [0, 1, 2, 3, 4, 5].map((i) => listed(i));
  const { report, outcomes } = destroyAll(conn, sockets, 512, () =>
    sockets.filter((s) => alive.has(indexOf(s))),
  );
  assert.deepEqual(
    outcomes.filter(([, o]) => o !== "destroyed"),
    [
      [3, "gone"],
      [5, "failed"],
    ],
  );
  assert.equal(report.destroyed, 4);
  assert.deepEqual(
    report.failed.map((f) => [indexOf(f.socket), f.code]),
    [[5, "ENOENT"]],
  );
  assert.match(report.failed[0]?.message ?? "", /SO_REUSEPORT/);
});

test("EPERM on the probe stops the rest: they are skipped, never sent", () => {
  const conn = kernel(() => Errno.EPERM);
  const { report } = destroyAll(
    conn,
    [0, 1, 2, 3].map((i) => listed(i)),
  );
  assert.equal(conn.sent.filter((m) => m.type === SOCK_DESTROY).length, 1);
  assert.equal(report.failed.length, 1);
  assert.equal(report.skipped, 3);
  assert.deepEqual(
    report.stops.map((s) => s.code),
    ["EPERM"],
  );
});

test("EOPNOTSUPP stops only its protocol; each protocol is probed on its own", () => {
  const conn = new FakeNetlink({
    respond: errorsOnly((m) =>
      m.type === SOCK_DESTROY && m.payload[1] === IPPROTO.tcp ? Errno.EOPNOTSUPP : 0,
    ),
  });
  const sockets = [listed(0, "tcp"), listed(1), listed(2, "tcp"), listed(3)];
  const { report } = destroyAll(conn, sockets);
  assert.equal(report.destroyed, 2);
  assert.equal(report.skipped, 1);
  assert.deepEqual(
    report.stops.map((s) => [s.protocol, s.code]),
    [["tcp", "EOPNOTSUPP"]],
  );
  const destroys = conn.sent.filter((m) => m.type === SOCK_DESTROY).map((m) => sportOf(m) - 5000);
  assert.deepEqual(destroys, [0, 1, 3], "the second tcp socket is never sent");
});

test("a batch whose answers never come fails every socket in it with ETIMEDOUT", () => {
  // The probe is answered; the second write's answers are lost.
  let writes = 0;
  const conn = kernel(() => 0, { deliver: (answers) => (++writes === 1 ? answers : []) });
  const { report, thrown } = destroyAll(
    conn,
    [0, 1, 2, 3].map((i) => listed(i)),
  );
  assert.equal((thrown as Error).name, "NetlinkTimeoutError");
  assert.equal(report.destroyed, 1);
  assert.deepEqual(
    report.failed.map((f) => [indexOf(f.socket), f.code]),
    [
      [1, "ETIMEDOUT"],
      [2, "ETIMEDOUT"],
      [3, "ETIMEDOUT"],
    ],
  );
});

test("ENOBUFS mid-batch: nobody knows which destroys happened, so the whole batch failed with ENOBUFS", () => {
  let writes = 0;
  const conn = kernel((i) => (i % 2 ? Errno.ENOENT : 0), {
    deliver: (answers) => (++writes === 2 ? [answers[0]!, enobufs(), ...answers.slice(1)] : answers),
  });
  const { report, thrown } = destroyAll(
    conn,
    Array.from({ length: 8 }, (_, i) => listed(i)),
  );
  assert.equal((thrown as { code?: string }).code, "ENOBUFS");
  assert.equal(report.destroyed, 1, "only the probe, answered before the overflow");
  assert.equal(report.gone, 0, "an ENOENT read before ENOBUFS is not trusted alone");
  assert.equal(report.failed.length, 7);
  assert.ok(report.failed.every((f) => f.code === "ENOBUFS"));
});

test("a malformed answer fails the batch with EIO", () => {
  let writes = 0;
  const conn = kernel(() => 0, {
    deliver: (answers) => (++writes === 2 ? [Buffer.from("ffffffff", "hex"), ...answers] : answers),
  });
  const { report, thrown } = destroyAll(
    conn,
    [0, 1, 2].map((i) => listed(i)),
  );
  assert.equal((thrown as Error).name, "NetlinkProtocolError");
  assert.deepEqual(
    report.failed.map((f) => f.code),
    ["EIO", "EIO"],
  );
});

test("batches are cut at batchSize, and at what the receive queue could hold if every request failed", () => {
  const conn = kernel(() => 0);
  destroyAll(
    conn,
    Array.from({ length: 10 }, (_, i) => listed(i)),
    4,
  );
  const perWrite = conn.writes.map((w) => splitMessages(w).filter((m) => m.type === SOCK_DESTROY).length);
  // The probe goes alone, so the first batch of four is sent as 1 + 3.
  assert.deepEqual(perWrite, [1, 3, 4, 2]);
  const small = kernel(() => 0, { receiveQueueBytes: 3 * 1024 });
  destroyAll(
    small,
    Array.from({ length: 10 }, (_, i) => listed(i)),
    512,
  );
  assert.ok(small.writes.every((w) => splitMessages(w).length - 1 <= 3));
});

test("unix sockets are failed with EOPNOTSUPP without a request", () => {
  const conn = kernel(() => 0);
  const d = new Destroyer(() => conn, conn.receiveQueueBytes, { batchSize: 8 });
  d.add({ family: "unix", protocol: "unix" } as never);
  d.flush(conn);
  assert.equal(conn.sent.length, 0);
  assert.deepEqual(
    d.report.failed.map((f) => f.code),
    ["EOPNOTSUPP"],
  );
});

test("vsock, tipc and xdp sockets fail with EOPNOTSUPP naming their protocol, without a request", () => {
  const conn = kernel(() => 0);
  const d = new Destroyer(() => conn, conn.receiveQueueBytes, { batchSize: 8 });
  const sockets = [
    new VsockSocket("stream", "established", 0, { srcCid: 3, srcPort: 1, dstCid: 2, dstPort: 2 }, 1, 1n),
    new TipcSocket("rdm"),
    new XdpSocket(3, 3n),
  ];
  for (const s of sockets) d.add(s);
  d.flush(conn);
  assert.equal(conn.sent.length, 0);
  assert.deepEqual([d.report.matched, d.report.destroyed], [3, 0]);
  assert.deepEqual(
    d.report.failed.map((f) => [f.socket.family, f.code, f.message]),
    ["vsock", "tipc", "xdp"].map((p) => [
      p,
      "EOPNOTSUPP",
      `the kernel cannot destroy ${p} sockets (no SOCK_DESTROY handler for this protocol)`,
    ]),
  );
});

test("a socket whose address was changed after listing fails with EINVAL naming it; the others go", () => {
  const conn = kernel(() => 0);
  const changed = listed(1);
  changed.dst = "garbage";
  const { report, outcomes } = destroyAll(conn, [listed(0), changed, listed(2)]);
  assert.equal(report.destroyed, 2);
  assert.deepEqual(
    report.failed.map((f) => [indexOf(f.socket), f.code, f.message]),
    [[1, "EINVAL", 'not sent: its dst "garbage" is not an IPv4 address']],
  );
  assert.deepEqual(outcomes, [
    [1, "failed"],
    [0, "destroyed"],
    [2, "destroyed"],
  ]);
  assert.deepEqual(conn.sent.filter((m) => m.type === SOCK_DESTROY).map(sportOf), [5000, 5002]);
});
