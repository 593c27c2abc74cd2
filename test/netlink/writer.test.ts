/**
 * MessageWriter against bytes built independently by test/diag/layout.ts: back-patched nlmsg_len and
 * nla_len, zeroed padding, several messages back to back, and overflow as a typed error.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MessageWriter } from "../../src/netlink/index.js";
import { MisuseError } from "../../src/sys/errors.js";
import { NLMSGHDR, nlattr, nlmsg, u32, unpack } from "../diag/layout.js";

/** A writer over a buffer pre-filled with 0xAA, so unwritten padding shows up as 0xAA. */
function dirtyWriter(size = 256): MessageWriter {
  return new MessageWriter(Buffer.alloc(size, 0xaa));
}

const written = (w: MessageWriter) => w.buf.subarray(0, w.length);

describe("MessageWriter", () => {
  test("begin/end writes struct nlmsghdr with the length patched in and pid 0", () => {
    const w = dirtyWriter();
    w.begin(20, 0x301, 0xfedcba98).end();
    assert.equal(w.length, 16);
    assert.deepEqual(unpack(NLMSGHDR, w.buf), {
      nlmsg_len: 16,
      nlmsg_type: 20,
      nlmsg_flags: 0x301,
      nlmsg_seq: 0xfedcba98,
      nlmsg_pid: 0,
    });
    assert.deepEqual(written(w), nlmsg({ type: 20, flags: 0x301, seq: 0xfedcba98 }));
  });

  test("a negative sequence number is written as its u32 value", () => {
    const w = dirtyWriter();
    w.begin(1, 1, -1).end();
    assert.equal(unpack(NLMSGHDR, w.buf).nlmsg_seq, 0xffffffff);
  });

  test("an unaligned payload: nlmsg_len counts it unpadded, the padding is zeroed", () => {
    const w = dirtyWriter();
    w.begin(20, 1, 7);
    const o = w.reserve(5);
    assert.equal(o, 16);
    assert.deepEqual(written(w).subarray(16, 21), Buffer.alloc(5), "reserve() zeroes its bytes");
    w.buf.write("hello", o, "latin1");
    w.end();
    assert.equal(w.length, 24, "the next message starts 4-byte aligned");
    assert.equal(w.buf.readUInt32LE(0), 21);
    assert.deepEqual(written(w), nlmsg({ type: 20, flags: 1, seq: 7 }, Buffer.from("hello")));
  });

  test("attr() back-patches nla_len, pads the payload with zeros and counts in nlmsg_len", () => {
    const w = dirtyWriter();
    w.begin(20, 1, 9)
      .attr(1, Buffer.from([1, 2, 3]))
      .attrU32(3, 262)
      .attr(5, Buffer.alloc(0))
      .end();
    const expected = nlmsg(
      { type: 20, flags: 1, seq: 9 },
      nlattr(1, Buffer.from([1, 2, 3])),
      nlattr(3, u32(262)),
      nlattr(5, Buffer.alloc(0)),
    );
    assert.deepEqual(written(w), expected);
    assert.equal(w.buf.readUInt16LE(16), 7, "nla_len of the 3-byte attribute excludes its padding");
    assert.equal(w.buf[16 + 7], 0, "attribute padding is zeroed");
    assert.equal(w.buf.readUInt32LE(0), 16 + 8 + 8 + 4);
  });

  test("attrU32 writes the value in host order and accepts values above 2^31", () => {
    const w = dirtyWriter();
    w.begin(20, 1, 1).attrU32(2, 0xfffffffe).end();
    assert.deepEqual(written(w), nlmsg({ type: 20, flags: 1, seq: 1 }, nlattr(2, u32(0xfffffffe))));
  });

  test("several messages back to back, each with its own length, 4-byte aligned", () => {
    const w = dirtyWriter();
    w.begin(21, 5, 100);
    w.buf.fill(0x11, w.reserve(3), w.length);
    w.end();
    w.begin(21, 5, 101).attrU32(3, 17).end();
    w.begin(20, 0x301, 102).end();
    const expected = Buffer.concat([
      nlmsg({ type: 21, flags: 5, seq: 100 }, Buffer.alloc(3, 0x11)),
      nlmsg({ type: 21, flags: 5, seq: 101 }, nlattr(3, u32(17))),
      nlmsg({ type: 20, flags: 0x301, seq: 102 }),
    ]);
    assert.deepEqual(written(w), expected);
    assert.deepEqual(
      [0, 20, 44].map((o) => unpack(NLMSGHDR, w.buf, o).nlmsg_len),
      [19, 24, 16],
    );
  });

  test("reset() starts over in the same buffer", () => {
    const w = dirtyWriter();
    w.begin(20, 1, 1).attrU32(1, 1).end();
    w.reset().begin(21, 5, 2).end();
    assert.deepEqual(written(w), nlmsg({ type: 21, flags: 5, seq: 2 }));
  });

  test("end() without begin() is a MisuseError", () => {
    assert.throws(() => dirtyWriter().end(), MisuseError);
    const w = dirtyWriter();
    w.begin(20, 1, 1).end();
    assert.throws(() => w.end(), MisuseError, "a message is ended once");
  });

  describe("overflow is a MisuseError naming the sizes, never a RangeError", () => {
    const cases: [string, number, (w: MessageWriter) => void, RegExp][] = [
      ["header", 15, (w) => w.begin(20, 1, 1), /16 bytes needed, buffer holds 15/],
      ["reserve", 20, (w) => w.begin(20, 1, 1).reserve(5), /21 bytes needed, buffer holds 20/],
      ["attribute header", 18, (w) => w.begin(20, 1, 1).attrU32(1, 1), /20 bytes needed, buffer holds 18/],
      ["attribute payload", 22, (w) => w.begin(20, 1, 1).attrU32(1, 1), /24 bytes needed, buffer holds 22/],
      [
        "bytes attribute",
        24,
        (w) => w.begin(20, 1, 1).attr(1, Buffer.alloc(5)),
        /25 bytes needed, buffer holds 24/,
      ],
      [
        "padding",
        21,
        (w) => {
          w.begin(20, 1, 1).reserve(5);
          w.end();
        },
        /24 bytes needed, buffer holds 21/,
      ],
      [
        "second message",
        31,
        (w) => w.begin(20, 1, 1).end().begin(20, 1, 2),
        /32 bytes needed, buffer holds 31/,
      ],
    ];
    for (const [what, size, write, message] of cases) {
      test(what, () => {
        const w = new MessageWriter(Buffer.alloc(size));
        assert.throws(
          () => write(w),
          (err: unknown) => err instanceof MisuseError && message.test(err.message),
        );
        assert.ok(w.length <= size, "nothing was written past the buffer");
      });
    }
  });
});
