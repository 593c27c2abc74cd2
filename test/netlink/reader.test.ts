/**
 * MessageReader against golden bytes written out by hand, one field per line, from
 * linux/netlink.h: header fields, 4-byte alignment between messages, the error code of NLMSG_ERROR
 * and NLMSG_DONE, and every way a header can lie about its length.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageReader, NetlinkProtocolError } from "../../src/netlink/index.js";

/** Bytes from hex words (whitespace and comments between them ignored). */
function hex(text: string): Buffer {
  return Buffer.from(text.replace(/#[^\n]*/g, "").replace(/\s+/g, ""), "hex");
}

// A 21-byte SOCK_DIAG_BY_FAMILY part (5 payload bytes, padded to 24), then an NLMSG_ERROR failure
// (EPERM) echoing its request's header, then NLMSG_DONE with status 0.
const GOLDEN = hex(`
  15000000 1400 0200 e8030000 00000000  # len 21, type 20, flags NLM_F_MULTI, seq 1000, pid 0
  0102030405 000000                     # payload, then 3 pad bytes
  24000000 0200 0001 e9030000 00000000  # len 36, NLMSG_ERROR, flags 0x100 (capped), seq 1001
  ffffffff                              # error -1: EPERM
  10000000 1500 0100 e9030000 00000000  # the request's nlmsghdr
  14000000 0300 0200 ea030000 00000000  # len 20, NLMSG_DONE, NLM_F_MULTI, seq 1002
  00000000                              # status 0
`);

test("walks header fields, payload bounds and alignment of golden bytes", () => {
  const r = new MessageReader().reset(GOLDEN, GOLDEN.length, "golden");
  const seen: unknown[] = [];
  while (r.next()) seen.push([r.type, r.flags, r.seq, r.offset, r.length, r.isEnd, r.errno()]);
  assert.deepEqual(seen, [
    [20, 0x2, 1000, 16, 5, false, 0],
    [2, 0x100, 1001, 40, 20, true, 1],
    [3, 0x2, 1002, 76, 4, true, 0],
  ]);
  assert.deepEqual([...GOLDEN.subarray(16, 21)], [1, 2, 3, 4, 5]);
});

test("stops at `end`, not at the end of the buffer", () => {
  const r = new MessageReader().reset(GOLDEN, 24, "first only");
  assert.equal(r.next(), true);
  assert.equal(r.next(), false);
  assert.equal(r.next(), false, "stays finished");
});

test("a failed dump's NLMSG_DONE status is its errno; a positive status is no error", () => {
  const done = (status: string) => hex(`14000000 0300 0200 01000000 00000000 ${status}`);
  const r = new MessageReader();
  r.reset(done("feffffff"), 20, "done").next();
  assert.equal(r.errno(), 2, "-ENOENT");
  r.reset(done("05000000"), 20, "done").next();
  assert.equal(r.errno(), 0);
});

test("a message other than ERROR or DONE carries no errno, whatever its payload", () => {
  const r = new MessageReader().reset(hex("14000000 1400 0200 01000000 00000000 ffffffff"), 20, "part");
  assert.ok(r.next());
  assert.equal(r.isEnd, false);
  assert.equal(r.errno(), 0);
});

for (const [what, bytes, at] of [
  ["a header cut short", "10000000 0300 0200", 0],
  ["nlmsg_len below the header size", "0f000000 0300 0200 01000000 00000000", 0],
  ["nlmsg_len past the end", "20000000 0300 0200 01000000 00000000 00000000", 0],
  [
    "nlmsg_len 0 after a good message",
    "10000000 0100 0000 01000000 00000000 00000000 00000000 00000000 00000000",
    16,
  ],
] as const) {
  test(`${what} is a NetlinkProtocolError naming the byte, and ends the walk`, () => {
    const b = hex(bytes);
    const r = new MessageReader().reset(b, b.length, "walk");
    if (at > 0) assert.ok(r.next());
    assert.throws(
      () => r.next(),
      (err: unknown) =>
        err instanceof NetlinkProtocolError &&
        err.message.startsWith(`walk: malformed netlink message at byte ${at}`),
    );
    assert.equal(r.next(), false);
  });
}

test("an NLMSG_ERROR without room for its error code is malformed, not an ack", () => {
  const b = hex("10000000 0200 0000 01000000 00000000");
  const r = new MessageReader().reset(b, b.length, "ack");
  assert.throws(() => r.next(), /ack: NLMSG_ERROR at byte 0 has no error code/);
});

test("walking one buffer twice gives the same messages (nothing kept between walks)", () => {
  const r = new MessageReader();
  const walk = () => {
    const out: number[] = [];
    r.reset(GOLDEN, GOLDEN.length, "again");
    while (r.next()) out.push(r.seq);
    return out;
  };
  assert.deepEqual(walk(), [1000, 1001, 1002]);
  assert.deepEqual(walk(), [1000, 1001, 1002]);
});
