/**
 * Batch answers over a fake connection: collectErrors (requests without NLM_F_ACK, then a NOOP
 * barrier) and collectAcks, with answers reordered, interleaved with strays, dropped, or replaced
 * by ENOBUFS; and ErrorsOnlyBatch, which both batchers send through. The real kernel's side is in kernel.test.ts and the sockets destroy tests.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  collectAcks,
  collectErrors,
  ErrorsOnlyBatch,
  MessageWriter,
  NetlinkProtocolError,
  NetlinkTimeoutError,
  writeBarrier,
} from "../../src/netlink/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { NLMSGHDR, nlmsg, pack } from "../diag/layout.js";
import {
  enobufs,
  errorsOnly,
  FakeNetlink,
  type FakeNetlinkOptions,
  strayAnswer,
} from "../kit/fake-netlink.js";

const NLMSG_NOOP = 1;
const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;

/** Errnos by request index (absent: success) for a batch whose first request is numbered `first`. */
function failing(first: number, byIndex: Record<number, number>) {
  return errorsOnly((m) => (m.type === NLMSG_NOOP ? 0 : (byIndex[m.seq - first] ?? 0)));
}

/** Send `count` requests of type 99 (ack asked or not) and, when `barrier`, a barrier. */
function sendBatch(conn: FakeNetlink, count: number, ack: boolean, barrier: boolean) {
  const first = conn.nextSeq();
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const seq = i === 0 ? first : conn.nextSeq();
    parts.push(
      nlmsg({ type: 99, flags: ack ? NLM_F_REQUEST | NLM_F_ACK : NLM_F_REQUEST, seq }, Buffer.alloc(4)),
    );
  }
  const barrierSeq = conn.nextSeq();
  if (barrier) parts.push(nlmsg({ type: NLMSG_NOOP, flags: NLM_F_REQUEST | NLM_F_ACK, seq: barrierSeq }));
  const bytes = Buffer.concat(parts);
  conn.send(bytes, bytes.length);
  return { first, barrierSeq };
}

function errorsOf(options: FakeNetlinkOptions, count: number, fails: Record<number, number>) {
  const conn = new FakeNetlink({ ...options, respond: failing(1001, fails) });
  const { first, barrierSeq } = sendBatch(conn, count, false, true);
  const got: [number, number][] = [];
  collectErrors(conn, first, count, barrierSeq, "batch", (i, errno) => got.push([i, errno]));
  return { got, conn };
}

test("writeBarrier writes NLMSG_NOOP with NLM_F_REQUEST|NLM_F_ACK and nothing else", () => {
  const w = new MessageWriter(Buffer.alloc(64));
  writeBarrier(w, 0x01020304);
  assert.deepEqual(
    w.buf.subarray(0, w.length),
    pack(NLMSGHDR, { nlmsg_len: 16, nlmsg_type: 1, nlmsg_flags: 5, nlmsg_seq: 0x01020304 }),
  );
});

test("collectErrors reports each failure against its own request and stops at the barrier", () => {
  const { got, conn } = errorsOf({ messagesPerReceive: 1 }, 10, { 2: Errno.ENOENT, 7: Errno.EPERM });
  assert.deepEqual(got, [
    [2, Errno.ENOENT],
    [7, Errno.EPERM],
  ]);
  assert.equal(conn.pending, 0, "the barrier's ack was the last answer");
  assert.equal(conn.receives, 3, "one receive per failure, one for the barrier");
});

test("collectErrors with no failure takes one receive: the barrier's ack", () => {
  const { got, conn } = errorsOf({}, 50, {});
  assert.deepEqual(got, []);
  assert.equal(conn.receives, 1);
});

test("collectErrors matches by sequence number: reordered answers and strays land on the right request", () => {
  const { got } = errorsOf(
    {
      messagesPerReceive: 3,
      deliver: (answers) => [
        strayAnswer(1004, 0),
        strayAnswer(5, Errno.EBUSY),
        ...answers.slice(0, -1).reverse(),
        strayAnswer(999, Errno.EIO),
        answers.at(-1)!,
      ],
    },
    6,
    { 0: Errno.EINVAL, 3: Errno.ENOENT, 5: Errno.EPERM },
  );
  assert.deepEqual(
    got.sort((a, b) => a[0] - b[0]),
    [
      [0, Errno.EINVAL],
      [3, Errno.ENOENT],
      [5, Errno.EPERM],
    ],
  );
});

test("collectErrors throws ENOBUFS when the kernel dropped answers", () => {
  assert.throws(
    () =>
      errorsOf({ deliver: (answers) => [answers[0]!, enobufs(), ...answers.slice(1)] }, 5, {
        0: Errno.ENOENT,
        3: Errno.ENOENT,
      }),
    (err: unknown) => err instanceof SysError && err.errno === Errno.ENOBUFS,
  );
});

test("collectErrors throws NetlinkTimeoutError when the barrier's ack never comes", () => {
  assert.throws(
    () => errorsOf({ deliver: (answers) => answers.slice(0, -1) }, 4, { 1: Errno.ENOENT }),
    NetlinkTimeoutError,
  );
});

test("a malformed answer is a NetlinkProtocolError", () => {
  const garbage = Buffer.from("ffff0000", "hex");
  assert.throws(() => errorsOf({ deliver: (answers) => [garbage, ...answers] }, 2, {}), NetlinkProtocolError);
});

test("collectAcks gives every request its ack, once, ignoring strays, over many receives", () => {
  const conn = new FakeNetlink({
    respond: failing(1001, { 1: Errno.ENOENT }),
    messagesPerReceive: 2,
    deliver: (answers) => [strayAnswer(1000, Errno.EPERM), ...answers, strayAnswer(1001)],
  });
  const { first } = sendBatch(conn, 5, true, false);
  const acks: [number, number][] = [];
  collectAcks(conn, first, 5, "acks", (i, errno) => acks.push([i, errno]));
  assert.deepEqual(acks, [
    [0, 0],
    [1, Errno.ENOENT],
    [2, 0],
    [3, 0],
    [4, 0],
  ]);
  assert.equal(conn.pending, 1, "the stray after the last ack is left unread");
});

test("collectAcks for no request reads nothing", () => {
  const conn = new FakeNetlink();
  collectAcks(conn, 1, 0, "none", () => assert.fail("no ack expected"));
  assert.equal(conn.receives, 0);
});

/** Write `count` errors-only requests of type 99 into `batch`, numbered from the connection's next. */
function fill(batch: ErrorsOnlyBatch, conn: FakeNetlink, count: number): number {
  const w = batch.writer.reset();
  const first = conn.nextSeq();
  for (let i = 0; i < count; i++) w.begin(99, NLM_F_REQUEST, i === 0 ? first : conn.nextSeq()).end();
  return first;
}

test("ErrorsOnlyBatch sends the requests and one barrier in one write, and returns each request's errno", () => {
  const conn = new FakeNetlink({ respond: failing(1001, { 1: Errno.EPERM, 3: Errno.ENOENT }) });
  const batch = new ErrorsOnlyBatch(conn.receiveQueueBytes, 8, 16);
  const first = fill(batch, conn, 4);
  const errnos = batch.send(conn, first, 4, conn.nextSeq(), "batch");
  assert.deepEqual([...errnos.subarray(0, 4)], [0, Errno.EPERM, 0, Errno.ENOENT]);
  assert.equal(conn.writes.length, 1, "one write");
  const types = [];
  for (let o = 0; o < conn.writes[0]!.length; o += conn.writes[0]!.readUInt32LE(o))
    types.push(conn.writes[0]!.readUInt16LE(o + 4));
  assert.deepEqual(types, [99, 99, 99, 99, NLMSG_NOOP], "the barrier goes last");
  // The errnos of an earlier send do not leak into the next one.
  const again = batch.send(conn, fill(batch, conn, 2), 2, conn.nextSeq(), "batch");
  assert.deepEqual([...again.subarray(0, 2)], [0, 0]);
});

test("ErrorsOnlyBatch: a refusing check sends nothing; capacity never exceeds what the queue can answer", () => {
  const conn = new FakeNetlink({ respond: failing(1001, {}) });
  const batch = new ErrorsOnlyBatch(conn.receiveQueueBytes, 8, 16);
  const first = fill(batch, conn, 2);
  const refuse = () => {
    throw new NetlinkProtocolError("refused");
  };
  assert.throws(() => batch.send(conn, first, 2, conn.nextSeq(), "batch", refuse), NetlinkProtocolError);
  assert.equal(conn.writes.length, 0);
  assert.equal(new ErrorsOnlyBatch(4 * 1024, 512, 16).capacity, 4, "4 KiB of queue holds 4 failure answers");
  assert.equal(new ErrorsOnlyBatch(4 * 1024 * 1024, 512, 16).capacity, 512);
});

test("ErrorsOnlyBatch passes the connection's failure on (ENOBUFS): the caller cannot know what was done", () => {
  const conn = new FakeNetlink({ respond: failing(1001, {}), deliver: () => [enobufs()] });
  const batch = new ErrorsOnlyBatch(conn.receiveQueueBytes, 8, 16);
  const first = fill(batch, conn, 3);
  assert.throws(
    () => batch.send(conn, first, 3, conn.nextSeq(), "batch"),
    (err: unknown) => err instanceof SysError && err.errno === Errno.ENOBUFS,
  );
});
