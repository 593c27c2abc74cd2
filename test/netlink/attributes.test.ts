/**
 * AttributeReader over attribute runs built by test/diag/layout.ts: walking with padding, typed getters
 * and their length checks, the sticky error, nested runs and zero-length attributes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AttributeReader, DecodeError } from "../../src/netlink/index.js";
import { nlattr, u32, u64 } from "../diag/layout.js";

/** Every (type, payload) the reader visits in buf[start, end). */
function walk(buf: Buffer, start = 0, end = buf.length): [number, Buffer][] {
  const a = new AttributeReader().reset(buf, start, end, "test");
  const out: [number, Buffer][] = [];
  while (a.next()) out.push([a.type, buf.subarray(a.offset, a.offset + a.length)]);
  if (a.error) throw a.error;
  return out;
}

/** A reader positioned on the single attribute in `buf`. */
function on(buf: Buffer): AttributeReader {
  const a = new AttributeReader().reset(buf, 0, buf.length, "test");
  assert.ok(a.next());
  return a;
}

function isDecodeError(what: string, offset: number, detail: RegExp) {
  return (err: unknown) =>
    err instanceof DecodeError && err.what === what && err.offset === offset && detail.test(err.message);
}

describe("AttributeReader walk", () => {
  test("visits each attribute with its type, payload offset and unpadded length", () => {
    const buf = Buffer.concat([
      nlattr(8, Buffer.from([2])),
      nlattr(21, u64(7n)),
      nlattr(12, Buffer.from("ab")),
    ]);
    const a = new AttributeReader().reset(buf, 0, buf.length, "test");
    const seen: [number, number, number][] = [];
    while (a.next()) seen.push([a.type, a.offset, a.length]);
    assert.equal(a.error, undefined);
    assert.deepEqual(seen, [
      [8, 4, 1],
      [21, 12, 8],
      [12, 24, 2],
    ]);
  });

  test("walks only buf[start, end), not the bytes around it", () => {
    const inner = Buffer.concat([nlattr(1, u32(1)), nlattr(2, u32(2))]);
    const buf = Buffer.concat([Buffer.alloc(12, 0xff), inner, Buffer.alloc(8, 0xff)]);
    assert.deepEqual(
      walk(buf, 12, 12 + inner.length).map(([t]) => t),
      [1, 2],
    );
  });

  test("an empty range yields nothing and no error", () => {
    assert.deepEqual(walk(Buffer.alloc(8), 4, 4), []);
  });

  test("the NLA_F_NESTED (0x8000) and NLA_F_NET_BYTEORDER (0x4000) flags are masked off the type", () => {
    assert.deepEqual(
      walk(Buffer.concat([nlattr(0x8000 | 5, u32(1)), nlattr(0x4000 | 6, u32(1))])).map(([t]) => t),
      [5, 6],
    );
  });

  test("a zero-length attribute (nla_len 4) is visited with length 0", () => {
    const buf = Buffer.concat([nlattr(3, Buffer.alloc(0)), nlattr(4, u32(9))]);
    const a = new AttributeReader().reset(buf, 0, buf.length, "test");
    assert.ok(a.next());
    assert.deepEqual([a.type, a.length], [3, 0]);
    assert.equal(a.string(), "");
    assert.ok(a.next());
    assert.deepEqual([a.type, a.u32()], [4, 9]);
    assert.equal(a.next(), false);
    assert.equal(a.error, undefined);
  });

  test("the last attribute may end unpadded at the end of the run", () => {
    const buf = nlattr(7, Buffer.from([1, 2, 3])).subarray(0, 7);
    assert.deepEqual(walk(buf), [[7, Buffer.from([1, 2, 3])]]);
  });

  test("nested attributes: a second reader walks the payload, padding included", () => {
    const nested = Buffer.concat([
      nlattr(1, Buffer.from([0xa])),
      nlattr(2, Buffer.from([0xb, 0xc])),
      nlattr(3, u32(5)),
    ]);
    const buf = Buffer.concat([nlattr(0x8000 | 9, nested), nlattr(10, Buffer.from([0xd]))]);
    const outer = new AttributeReader().reset(buf, 0, buf.length, "outer");
    const inner = new AttributeReader();
    const seen: string[] = [];
    while (outer.next()) {
      if (outer.type !== 9) {
        seen.push(`${outer.type}=${outer.u8()}`);
        continue;
      }
      inner.reset(buf, outer.offset, outer.offset + outer.length, "inner");
      while (inner.next())
        seen.push(
          `9.${inner.type}=${buf.subarray(inner.offset, inner.offset + inner.length).toString("hex")}`,
        );
      assert.equal(inner.error, undefined);
    }
    assert.equal(outer.error, undefined);
    assert.deepEqual(seen, ["9.1=0a", "9.2=0b0c", "9.3=05000000", "10=13"]);
  });

  describe("malformed headers end the walk with a DecodeError at the attribute's offset", () => {
    const good = nlattr(1, u32(1));
    const cases: [string, Buffer, number, RegExp][] = [
      [
        "nla_len below the header size",
        Buffer.concat([good, Buffer.from([3, 0, 1, 0])]),
        8,
        /length 3 does not fit/,
      ],
      ["nla_len 0", Buffer.concat([good, Buffer.alloc(4)]), 8, /length 0 does not fit/],
      [
        "nla_len past the end",
        Buffer.concat([good, Buffer.from([9, 0, 1, 0, 0, 0, 0, 0])]),
        8,
        /length 9 does not fit in 8/,
      ],
      ["1 trailing byte", Buffer.concat([good, Buffer.alloc(1)]), 8, /1 trailing bytes/],
      ["3 trailing bytes", Buffer.concat([good, Buffer.alloc(3)]), 8, /3 trailing bytes/],
    ];
    for (const [what, buf, offset, detail] of cases) {
      test(what, () => {
        const a = new AttributeReader().reset(buf, 0, buf.length, "test");
        assert.ok(a.next(), "the good attribute before it is read");
        assert.equal(a.next(), false);
        assert.ok(isDecodeError("test", offset, detail)(a.error), String(a.error));
        assert.equal(a.next(), false, "the walk stays ended");
      });
    }
  });
});

describe("AttributeReader typed getters", () => {
  test("u8, u32 and u64 read host order", () => {
    assert.equal(on(nlattr(1, Buffer.from([0xfe]))).u8(), 0xfe);
    assert.equal(on(nlattr(1, u32(0xdeadbeef))).u32(), 0xdeadbeef);
    assert.equal(on(nlattr(1, u64(0x0123456789abcdefn))).u64(), 0x0123456789abcdefn);
  });

  test("a getter on a payload shorter than its type records a DecodeError and returns 0", () => {
    const cases: [string, Buffer, (a: AttributeReader) => unknown, unknown, number][] = [
      ["u8 of 0 bytes", Buffer.alloc(0), (a) => a.u8(), 0, 1],
      ["u32 of 3 bytes", Buffer.alloc(3, 0xff), (a) => a.u32(), 0, 4],
      ["u64 of 4 bytes", Buffer.alloc(4, 0xff), (a) => a.u64(), 0n, 8],
    ];
    for (const [what, payload, read, zero, needs] of cases) {
      const a = on(nlattr(6, payload));
      assert.equal(read(a), zero, what);
      assert.ok(
        isDecodeError(
          "test",
          4,
          new RegExp(`attribute 6 of test has ${payload.length} bytes, needs ${needs}`),
        )(a.error),
        `${what}: ${a.error}`,
      );
      assert.equal(a.next(), false, `${what}: the walk ends at the error`);
    }
  });

  test("getters accept a longer payload and read its first bytes (a minimum, not an exact size)", () => {
    const a = on(nlattr(1, Buffer.from([1, 0, 0, 0, 2, 0, 0, 0])));
    assert.equal(a.u32(), 1);
    assert.equal(a.u8(), 1);
    assert.equal(a.error, undefined);
  });

  test("need() checks a minimum payload length", () => {
    const a = on(nlattr(1, Buffer.alloc(16)));
    assert.equal(a.need(16), true);
    assert.equal(a.error, undefined);
    assert.equal(a.need(17), false);
    assert.ok(isDecodeError("test", 4, /has 16 bytes, needs 17/)(a.error));
  });

  test("the first error sticks; reset() clears it", () => {
    const buf = Buffer.concat([nlattr(1, Buffer.alloc(2)), nlattr(2, Buffer.alloc(0))]);
    const a = new AttributeReader().reset(buf, 0, buf.length, "first");
    assert.ok(a.next());
    a.u32();
    const first = a.error;
    a.u64();
    assert.equal(a.error, first, "a later failure does not replace the first");
    assert.equal(a.next(), false);
    a.reset(buf, 0, buf.length, "second");
    assert.equal(a.error, undefined);
    assert.ok(a.next());
    assert.equal(a.type, 1);
  });

  test("string() stops at the first NUL, or at the payload's end without one", () => {
    assert.equal(on(nlattr(4, Buffer.from("cubic\0"))).string(), "cubic");
    assert.equal(on(nlattr(4, Buffer.from("bbr\0xx"))).string(), "bbr");
    const unterminated = Buffer.concat([nlattr(4, Buffer.from("reno")), Buffer.from("zz")]);
    assert.equal(on(unterminated).string(), "reno", "does not run into the following bytes");
    const padded = nlattr(4, Buffer.from("dctcp"));
    assert.equal(on(padded).string(), "dctcp", "padding is not part of the string");
  });
});
