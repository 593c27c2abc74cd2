/**
 * DumpCursor over a fake connection: a multipart answer split across receives at every size, stray
 * and NOOP messages, error answers, and answers cut off or dropped mid-stream. The kernel tests
 * (kernel.test.ts) check the same cursor against real dumps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DumpCursor, NetlinkError, NetlinkTimeoutError } from "../../src/netlink/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { nlmsg } from "../diag/layout.js";
import {
  type Delivery,
  doneAnswer,
  enobufs,
  errorAnswer,
  FakeNetlink,
  type FakeNetlinkOptions,
  partAnswer,
  type SentMessage,
  strayAnswer,
} from "../kit/fake-netlink.js";

const SOCK_DIAG_BY_FAMILY = 20;
const NLMSG_NOOP = 1;

/** Part i of an answer: 8 bytes holding i, so order and content can be checked. */
function part(to: SentMessage, i: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32LE(i);
  payload.writeUInt32LE(~i >>> 0, 4);
  return partAnswer(to, SOCK_DIAG_BY_FAMILY, payload);
}

/** A fake whose dumps answer `parts` messages then NLMSG_DONE, rewritten by `deliver`. */
function dumping(parts: number, options: FakeNetlinkOptions = {}): FakeNetlink {
  return new FakeNetlink({
    respond: (m) => [...Array.from({ length: parts }, (_, i) => part(m, i)), doneAnswer(m)],
    ...options,
  });
}

/** Send a dump request on `conn` and return its cursor. */
function dump(conn: FakeNetlink): DumpCursor {
  const seq = conn.nextSeq();
  const req = nlmsg({ type: SOCK_DIAG_BY_FAMILY, flags: 0x301, seq }, Buffer.alloc(56));
  conn.send(req, req.length);
  return new DumpCursor(conn, seq, "dump");
}

/** Read the cursor to its end: the index carried by each payload message. */
function drain(c: DumpCursor): number[] {
  const out: number[] = [];
  while (c.next()) {
    assert.equal(c.type, SOCK_DIAG_BY_FAMILY);
    assert.equal(c.length, 8);
    const i = c.buf.readUInt32LE(c.offset);
    assert.equal(c.buf.readUInt32LE(c.offset + 4), ~i >>> 0, "payload intact");
    out.push(i);
  }
  return out;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

for (const perReceive of [1, 2, 3, 7, 100]) {
  test(`an answer split ${perReceive} message(s) per receive comes out whole and in order`, () => {
    const conn = dumping(20, { messagesPerReceive: perReceive });
    const c = dump(conn);
    assert.deepEqual(drain(c), range(20));
    assert.equal(c.received, Math.ceil(21 / perReceive));
    assert.equal(c.next(), false, "a finished cursor stays finished");
    assert.equal(conn.pending, 0);
  });
}

test("messages of other sequence numbers and NOOPs inside the answer are skipped", () => {
  const conn = dumping(4, {
    deliver: (answers) => [
      strayAnswer(7, Errno.EPERM),
      answers[0]!,
      nlmsg({ type: NLMSG_NOOP, flags: 0, seq: 1001 }),
      strayAnswer(8),
      ...answers.slice(1),
    ],
  });
  assert.deepEqual(drain(dump(conn)), range(4));
});

test("an NLMSG_ERROR answer ends the dump with NetlinkError carrying errno and seq", () => {
  const conn = new FakeNetlink({ respond: (m) => [part(m, 0), errorAnswer(m, Errno.EPERM)] });
  const c = dump(conn);
  assert.ok(c.next());
  assert.throws(
    () => c.next(),
    (err: unknown) =>
      err instanceof NetlinkError && err.errno === Errno.EPERM && err.code === "EPERM" && err.seq === 1001,
  );
  assert.equal(c.next(), false, "the answer is over after the error");
});

test("NLMSG_DONE with a negative status is the dump's error", () => {
  const conn = new FakeNetlink({ respond: (m) => [doneAnswer(m, -Errno.EINTR)] });
  assert.throws(
    () => dump(conn).next(),
    (err: unknown) => err instanceof NetlinkError && err.errno === Errno.EINTR,
  );
});

test("a dump cut off mid-stream ends in NetlinkTimeoutError after what did arrive, and no further wait", () => {
  const conn = dumping(10, { deliver: (answers) => answers.slice(0, 6) });
  const c = dump(conn);
  const got: number[] = [];
  assert.throws(() => {
    while (c.next()) got.push(c.buf.readUInt32LE(c.offset));
  }, NetlinkTimeoutError);
  assert.deepEqual(got, range(6));
  const receives = conn.receives;
  c.close();
  assert.equal(c.next(), false);
  assert.equal(conn.receives, receives, "closing a cut-off cursor does not wait for the rest again");
});

test("ENOBUFS while a dump streams is thrown as the SysError it is", () => {
  const conn = dumping(6, {
    deliver: (answers: Delivery[]) => [...answers.slice(0, 3), enobufs(), ...answers.slice(3)],
  });
  const c = dump(conn);
  assert.throws(
    () => drain(c),
    (err: unknown) => err instanceof SysError && err.errno === Errno.ENOBUFS,
  );
});

test("closing a cursor early drains its answer, so the next dump on the connection is whole", () => {
  const conn = dumping(9, { messagesPerReceive: 2 });
  const first = dump(conn);
  assert.ok(first.next());
  first.close();
  assert.equal(conn.pending, 0, "the rest of the first answer was read");
  assert.deepEqual(drain(dump(conn)), range(9));
});

test("an error answer nobody waits for any more is swallowed by close()", () => {
  const conn = new FakeNetlink({ respond: (m) => [part(m, 0), part(m, 1), errorAnswer(m, Errno.EIO)] });
  const c = dump(conn);
  assert.ok(c.next());
  c.close();
  assert.equal(conn.pending, 0);
});
