/**
 * Requests against bytes built by the independent test builder: the dump request and its kernel
 * filter (CTA_FILTER flags in host order, tuples nested, CTA_MARK big-endian), the exact DELETE, and
 * the flush guard — a DELETE without a complete tuple can neither be written nor sent.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertNoFlush,
  FlushGuardError,
  writeDeleteRequest,
  writeDumpRequest,
  writeProbeDelete,
} from "../../src/ctnl/index.js";
import { MessageWriter } from "../../src/netlink/index.js";
import { nlattr, nlmsg, u32 } from "../diag/layout.js";
import { A, addressBytes, be16, be32, nest, nfgenmsg, T, tuple, u8 } from "./ct-layout.js";

const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const NLM_F_DUMP = 0x300;
const written = (w: MessageWriter) => Buffer.from(w.buf.subarray(0, w.length));

describe("writeDumpRequest", () => {
  test("no filter: GET with NLM_F_DUMP and nfgenmsg only", () => {
    const w = new MessageWriter(Buffer.alloc(256, 0xaa));
    writeDumpRequest(w, 9, { family: 0 });
    assert.deepEqual(
      written(w),
      nlmsg({ type: T.GET, flags: NLM_F_REQUEST | NLM_F_DUMP, seq: 9 }, nfgenmsg(0)),
    );
  });

  test("reply source and port of UDP: CTA_FILTER with REPLY_FLAGS and the reply tuple", () => {
    const w = new MessageWriter(Buffer.alloc(256, 0xaa));
    writeDumpRequest(w, 1, {
      family: 2,
      protocol: 17,
      reply: { src: addressBytes("10.244.1.7"), sport: 5353 },
    });
    const expected = nlmsg(
      { type: T.GET, flags: NLM_F_REQUEST | NLM_F_DUMP, seq: 1 },
      nfgenmsg(2),
      nest(A.FILTER, nlattr(A.FILTER_REPLY_FLAGS, u32((1 << 0) | (1 << 3) | (1 << 4)))),
      nest(
        A.TUPLE_REPLY,
        nest(A.TUPLE_IP, nlattr(A.IP_V4_SRC, addressBytes("10.244.1.7"))),
        nest(A.TUPLE_PROTO, nlattr(A.PROTO_NUM, u8(17)), nlattr(A.PROTO_SRC_PORT, be16(5353))),
      ),
    );
    assert.deepEqual(written(w), expected);
  });

  test("a protocol alone is compared through the original tuple; mark and zone ride along", () => {
    const w = new MessageWriter(Buffer.alloc(256));
    writeDumpRequest(w, 2, { family: 10, protocol: 6, mark: { value: 0x10, mask: 0xf0 }, zone: 3 });
    const expected = nlmsg(
      { type: T.GET, flags: NLM_F_REQUEST | NLM_F_DUMP, seq: 2 },
      nfgenmsg(10),
      nlattr(A.MARK, be32(0x10)),
      nlattr(A.MARK_MASK, be32(0xf0)),
      nlattr(A.ZONE, be16(3)),
      nest(A.FILTER, nlattr(A.FILTER_ORIG_FLAGS, u32(1 << 3))),
      nest(A.TUPLE_ORIG, nest(A.TUPLE_PROTO, nlattr(A.PROTO_NUM, u8(6)))),
    );
    assert.deepEqual(written(w), expected);
  });
});

describe("writeDeleteRequest and the flush guard", () => {
  const orig = tuple(A.TUPLE_ORIG, 17, { src: "10.0.0.1", dst: "10.96.0.10", sport: 40000, dport: 53 });

  test("a DELETE carries the tuple byte for byte, CTA_ID, CTA_ZONE, and asks for no ack", () => {
    const w = new MessageWriter(Buffer.alloc(256, 0xaa));
    writeDeleteRequest(w, 77, 2, orig, 0, orig.length, 0xabcdef01, 4);
    const expected = nlmsg(
      { type: T.DELETE, flags: NLM_F_REQUEST, seq: 77 },
      nfgenmsg(2),
      orig,
      nlattr(A.ID, be32(0xabcdef01)),
      nlattr(A.ZONE, be16(4)),
    );
    assert.deepEqual(written(w), expected);
    assert.doesNotThrow(() => assertNoFlush(w.buf, w.length));
  });

  test("zone 0 is not sent (the default zone)", () => {
    const w = new MessageWriter(Buffer.alloc(256));
    writeDeleteRequest(w, 1, 2, orig, 0, orig.length, 5, 0);
    assert.deepEqual(
      written(w),
      nlmsg({ type: T.DELETE, flags: NLM_F_REQUEST, seq: 1 }, nfgenmsg(2), orig, nlattr(A.ID, be32(5))),
    );
  });

  test("the probe DELETE is of UDP 0.0.0.0:0 -> 0.0.0.0:0, id 0, and asks for an ack", () => {
    const w = new MessageWriter(Buffer.alloc(256, 0xaa));
    writeProbeDelete(w, 3);
    const none = tuple(A.TUPLE_ORIG, 17, { src: "0.0.0.0", dst: "0.0.0.0", sport: 0, dport: 0 });
    assert.deepEqual(
      written(w),
      nlmsg(
        { type: T.DELETE, flags: NLM_F_REQUEST | NLM_F_ACK, seq: 3 },
        nfgenmsg(2),
        none,
        nlattr(A.ID, be32(0)),
      ),
    );
  });

  const incomplete: [string, Buffer, number][] = [
    ["no tuple at all", Buffer.alloc(0), 2],
    [
      "a reply tuple where the original is required",
      tuple(A.TUPLE_REPLY, 17, { src: "1.1.1.1", dst: "2.2.2.2" }),
      2,
    ],
    ["a tuple without addresses", nest(A.TUPLE_ORIG, nest(A.TUPLE_PROTO, nlattr(A.PROTO_NUM, u8(17)))), 2],
    [
      "a tuple without its destination",
      nest(
        A.TUPLE_ORIG,
        nest(A.TUPLE_IP, nlattr(A.IP_V4_SRC, addressBytes("1.1.1.1"))),
        nest(A.TUPLE_PROTO, nlattr(A.PROTO_NUM, u8(17))),
      ),
      2,
    ],
    [
      "a tuple without a protocol",
      nest(
        A.TUPLE_ORIG,
        nest(
          A.TUPLE_IP,
          nlattr(A.IP_V4_SRC, addressBytes("1.1.1.1")),
          nlattr(A.IP_V4_DST, addressBytes("2.2.2.2")),
        ),
      ),
      2,
    ],
    ["IPv4 addresses in an IPv6 request", orig, 10],
    ["an empty nest", nest(A.TUPLE_ORIG), 2],
    ["a family that is neither", orig, 0],
  ];
  for (const [what, bytes, family] of incomplete) {
    test(`refused, nothing written: ${what}`, () => {
      const w = new MessageWriter(Buffer.alloc(256));
      w.begin(1, 1, 1).end();
      assert.throws(() => writeDeleteRequest(w, 2, family, bytes, 0, bytes.length, 1, 0), FlushGuardError);
      assert.equal(w.length, 16);
    });
  }

  test("a span pointing past the buffer is refused", () => {
    const w = new MessageWriter(Buffer.alloc(256));
    assert.throws(() => writeDeleteRequest(w, 2, 2, orig, 4, orig.length, 1, 0), FlushGuardError);
    assert.equal(w.length, 0);
  });

  test("assertNoFlush refuses a batch holding a DELETE without a tuple, wherever it is", () => {
    const good = nlmsg(
      { type: T.DELETE, flags: NLM_F_REQUEST, seq: 1 },
      nfgenmsg(2),
      orig,
      nlattr(A.ID, be32(1)),
    );
    const flush = nlmsg({ type: T.DELETE, flags: NLM_F_REQUEST, seq: 2 }, nfgenmsg(2));
    const flushByMark = nlmsg(
      { type: T.DELETE, flags: NLM_F_REQUEST, seq: 3 },
      nfgenmsg(0),
      nlattr(A.MARK, be32(1)),
    );
    const noop = nlmsg({ type: 1, flags: 5, seq: 4 });
    for (const batch of [[flush], [good, flush], [good, good, flushByMark, noop], [flush, noop]]) {
      const bytes = Buffer.concat(batch);
      assert.throws(() => assertNoFlush(bytes, bytes.length), FlushGuardError);
    }
    const fine = Buffer.concat([good, good, noop]);
    assert.doesNotThrow(() => assertNoFlush(fine, fine.length));
    // Other messages (a GET dump without a tuple) are no concern of the guard.
    const dump = nlmsg({ type: T.GET, flags: NLM_F_REQUEST | NLM_F_DUMP, seq: 5 }, nfgenmsg(0));
    assert.doesNotThrow(() => assertNoFlush(dump, dump.length));
  });
});
