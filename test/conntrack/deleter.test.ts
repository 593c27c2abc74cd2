/**
 * The conntrack delete batcher over a fake connection, without root: the bytes it writes (errors-only
 * DELETEs carrying the listed tuple byte for byte and the entry's id, then a NOOP barrier, checked
 * against the independent test builder), the entry each answer is charged to (ENOENT = gone), the
 * stop after EPERM, what a batch becomes when its answers time out or overflow, and the flush guard
 * refusing a request before anything is sent.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EntryDeleter } from "../../src/conntrack/deleter.js";
import { type ConntrackEntry, EntryDecoder, FlushGuardError } from "../../src/ctnl/index.js";
import { NetlinkTimeoutError } from "../../src/netlink/index.js";
import type { Outcome } from "../../src/run/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { A, be32, entryPayload, nfgenmsg, T, type TestEntry, tuple } from "../ctnl/ct-layout.js";
import { nlattr, nlmsg } from "../diag/layout.js";
import { enobufs, errorsOnly, FakeNetlink, type SentMessage } from "../kit/fake-netlink.js";

const NLMSG_NOOP = 1;

function testEntry(i: number): TestEntry {
  return {
    proto: 17,
    orig: { src: "10.0.0.1", dst: "10.96.0.10", sport: 40000 + i, dport: 53 },
    reply: { src: "10.244.0.7", dst: "10.0.0.1", sport: 5353, dport: 40000 + i },
    id: 1000 + i,
  };
}

/** Feed entries 0..n-1 to the deleter as a dump would: decoded from a buffer the next one overwrites. */
function feed(deleter: EntryDeleter, n: number, from = 0): ConntrackEntry[] {
  const buf = Buffer.alloc(1024);
  const decoder = new EntryDecoder();
  const out: ConntrackEntry[] = [];
  for (let i = from; i < from + n; i++) {
    const payload = entryPayload(testEntry(i));
    buf.fill(0xee);
    payload.copy(buf, 8);
    const entry = decoder.decode(buf, 8, payload.length);
    out.push(entry);
    deleter.add(entry, buf, decoder.spans);
  }
  return out;
}

/** The DELETE for testEntry(i), built field by field: errors-only (NLM_F_REQUEST alone). */
function expectedDelete(seq: number, i: number): Buffer {
  const e = testEntry(i);
  return nlmsg(
    { type: T.DELETE, flags: 1, seq },
    nfgenmsg(2),
    tuple(A.TUPLE_ORIG, 17, e.orig),
    nlattr(A.ID, be32(e.id!)),
  );
}

function deleterOn(conn: FakeNetlink, batchSize = 1024) {
  const outcomes: Outcome<ConntrackEntry>[] = [];
  const deleter = new EntryDeleter(() => conn, conn.receiveQueueBytes, {
    batchSize,
    onOutcome: (_e, o) => outcomes.push(o),
  });
  return { deleter, outcomes };
}

const deletes = (sent: readonly SentMessage[]) => sent.filter((m) => m.type === T.DELETE);

test("one write of errors-only DELETEs with the listed tuples and ids, then a barrier; ENOENT is gone", () => {
  const conn = new FakeNetlink({
    respond: errorsOnly((m) => (m.type === T.DELETE && m.payload.includes(be32(1001)) ? Errno.ENOENT : 0)),
  });
  const { deleter, outcomes } = deleterOn(conn);
  feed(deleter, 3);
  assert.equal(conn.writes.length, 0, "nothing goes before the batch is full or flushed");
  deleter.flush(conn);
  assert.equal(conn.writes.length, 1);
  const [d0, d1, d2, barrier] = conn.sent;
  assert.deepEqual(
    [d0!.bytes, d1!.bytes, d2!.bytes],
    [0, 1, 2].map((i) => expectedDelete(conn.sent[i]!.seq, i)),
  );
  assert.equal(barrier!.type, NLMSG_NOOP);
  assert.equal(barrier!.flags, 0x5, "the barrier alone asks for an ack");
  assert.deepEqual(outcomes, ["deleted", "gone", "deleted"]);
  assert.deepEqual(
    { ...deleter.report, failed: deleter.report.failed.length },
    {
      matched: 3,
      deleted: 2,
      wouldDelete: 0,
      gone: 1,
      failed: 0,
      skipped: 0,
      dryRun: false,
    },
  );
});

test("the listener and the failure records get entries equal to the listed ones, from the batch's own copies", () => {
  const conn = new FakeNetlink({
    respond: errorsOnly((m) => (m.type === T.DELETE && m.payload.includes(be32(1002)) ? Errno.EBUSY : 0)),
  });
  const told: ConntrackEntry[] = [];
  const deleter = new EntryDeleter(() => conn, conn.receiveQueueBytes, {
    batchSize: 3,
    onOutcome: (e) => told.push(e),
  });
  const decoder = new EntryDecoder();
  const listed: ConntrackEntry[] = [];
  const buf = Buffer.alloc(4096);
  for (let i = 0; i < 5; i++) {
    // Attributes of a type the decoder skips make some messages larger than the batch's first guess.
    const padding = i % 2 === 0 ? [nlattr(0x3ff, Buffer.alloc(1500))] : [];
    const payload = Buffer.concat([entryPayload(testEntry(i)), ...padding]);
    buf.fill(0xee);
    payload.copy(buf, 8);
    const entry = decoder.decode(buf, 8, payload.length, "pod-a");
    listed.push(structuredClone(entry));
    deleter.add(entry, buf, decoder.spans);
  }
  deleter.flush(conn);
  assert.deepEqual(told, listed);
  assert.deepEqual(
    deleter.report.failed.map((f) => f.entry),
    [listed[2]],
  );
});

test("a full batch goes at once on the connection `connect` gives; the rest on flush's", () => {
  const first = new FakeNetlink();
  const second = new FakeNetlink();
  const deleter = new EntryDeleter(() => first, first.receiveQueueBytes, { batchSize: 4 });
  feed(deleter, 6);
  assert.equal(deletes(first.sent).length, 4);
  deleter.flush(second);
  assert.equal(deletes(second.sent).length, 2);
  assert.equal(deleter.report.deleted, 6);
});

test("EPERM fails its entry and skips every later one, which is never sent", () => {
  const conn = new FakeNetlink({ respond: errorsOnly((m) => (m.type === T.DELETE ? Errno.EPERM : 0)) });
  const { deleter, outcomes } = deleterOn(conn, 1);
  feed(deleter, 4);
  deleter.flush(conn);
  assert.equal(deletes(conn.sent).length, 1);
  assert.deepEqual(outcomes, ["failed", "skipped", "skipped", "skipped"]);
  const r = deleter.report;
  assert.equal(r.failed[0]?.code, "EPERM");
  assert.match(r.failed[0]!.message, /CAP_NET_ADMIN/);
  assert.equal(r.matched, r.deleted + r.gone + r.failed.length + r.skipped);
});

test("answers lost (ENOBUFS) or late (timeout): each entry of the batch failed with the reason, balanced", () => {
  for (const [error, code] of [
    [enobufs(), "ENOBUFS"],
    [new NetlinkTimeoutError("x", 0), "ETIMEDOUT"],
  ] as const) {
    const conn = new FakeNetlink({ deliver: () => [error] });
    const deleter = new EntryDeleter(() => conn, conn.receiveQueueBytes);
    feed(deleter, 3);
    assert.throws(() => deleter.flush(conn), error instanceof SysError ? SysError : NetlinkTimeoutError);
    assert.deepEqual(
      deleter.report.failed.map((f) => f.code),
      [code, code, code],
    );
    assert.equal(deleter.report.matched, 3);
  }
});

test("the flush guard: a span that is not the original tuple is refused and nothing is sent", () => {
  const conn = new FakeNetlink();
  const deleter = new EntryDeleter(() => conn, conn.receiveQueueBytes);
  const payload = entryPayload(testEntry(0));
  const entry = new EntryDecoder().decode(payload, 0, payload.length);
  // The reply tuple, the message header, an empty span: none of them is a complete CTA_TUPLE_ORIG.
  const reply = payload.indexOf(tuple(A.TUPLE_REPLY, 17, testEntry(0).reply!));
  for (const span of [
    { offset: reply, length: tuple(A.TUPLE_REPLY, 17, testEntry(0).reply!).length },
    { offset: 0, length: 4 },
    { offset: 0, length: 0 },
  ]) {
    assert.throws(
      () => deleter.add(entry, payload, { message: { offset: 0, length: payload.length }, origTuple: span }),
      FlushGuardError,
    );
  }
  deleter.flush(conn);
  assert.equal(conn.writes.length, 0, "no byte reached the connection");
  assert.equal(deleter.report.failed.length, 3);
  assert.equal(deleter.report.matched, 3);
});

test("a batch is checked again as a whole before it is sent", () => {
  const conn = new FakeNetlink();
  const deleter = new EntryDeleter(() => conn, conn.receiveQueueBytes);
  feed(deleter, 2);
  // Corrupt the queued bytes where the second DELETE's tuple begins: the send-time check must catch it.
  const w = (deleter as unknown as { batch: { writer: { buf: Buffer; length: number } } }).batch.writer;
  const second = w.buf.indexOf(nfgenmsg(2), w.buf.indexOf(nfgenmsg(2)) + 4);
  w.buf.writeUInt16LE(A.MARK, second + 4 + 2);
  assert.throws(() => deleter.flush(conn), FlushGuardError);
  assert.equal(conn.writes.length, 0);
});

test("a namespace that fails half way: the entries still queued fail with its cause, and the tally balances", () => {
  const conn = new FakeNetlink({ respond: errorsOnly(() => 0) });
  const { deleter, outcomes } = deleterOn(conn);
  feed(deleter, 3);
  deleter.abandon(new SysError("recvmsg", Errno.EIO));
  const r = deleter.report;
  assert.equal(conn.writes.length, 0, "nothing is sent after the failure");
  assert.deepEqual([r.matched, r.deleted, r.gone, r.failed.length, r.skipped], [3, 0, 0, 3, 0]);
  assert.ok(r.failed.every((f) => f.code === "EIO"));
  assert.deepEqual(outcomes, ["failed", "failed", "failed"]);
});
