/**
 * EntryDecoder against ctnetlink messages built by the independent test builder (ct-layout.ts):
 * nested big-endian attributes with NLA_F_NESTED set, both families, TCP state, zone, mark, id;
 * malformed input as DecodeError; the original tuple's span for exact deletes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EntryDecoder } from "../../src/ctnl/index.js";
import { DecodeError } from "../../src/netlink/index.js";
import { nlattr } from "../diag/layout.js";
import { A, be32, entryPayload, nest, nfgenmsg, tuple } from "./ct-layout.js";

const decode = (payload: Buffer, netns?: string) =>
  new EntryDecoder().decode(payload, 0, payload.length, netns);

describe("EntryDecoder", () => {
  test("a DNATed UDP entry: both tuples, status flags, timeout, mark, id, big-endian all", () => {
    const e = decode(
      entryPayload({
        proto: 17,
        orig: { src: "10.0.0.1", dst: "10.96.0.10", sport: 40000, dport: 53 },
        reply: { src: "10.244.1.7", dst: "10.0.0.1", sport: 5353, dport: 40000 },
        status: 0x12e, // SEEN_REPLY ASSURED CONFIRMED DST_NAT DST_NAT_DONE
        timeout: 0x01020304,
        mark: 0xdeadbeef,
        id: 0x80000001,
      }),
      "pod-a",
    );
    assert.deepEqual(e, {
      netns: "pod-a",
      family: "inet",
      protocol: "udp",
      protocolNumber: 17,
      original: { src: "10.0.0.1", dst: "10.96.0.10", sport: 40000, dport: 53 },
      reply: { src: "10.244.1.7", dst: "10.0.0.1", sport: 5353, dport: 40000 },
      status: 0x12e,
      flags: ["SEEN_REPLY", "ASSURED", "CONFIRMED", "DST_NAT", "DST_NAT_DONE"],
      timeout: 0x01020304,
      mark: 0xdeadbeef,
      zone: 0,
      id: 0x80000001,
      use: 0,
    });
  });

  test("an IPv6 TCP entry with its state, zone and RFC 5952 addresses", () => {
    const e = decode(
      entryPayload({
        proto: 6,
        orig: { src: "fd00:0:0:0:0:0:0:1", dst: "fd00::2", sport: 1, dport: 443 },
        tcpState: 3,
        zone: 7,
      }),
    );
    assert.equal(e.family, "inet6");
    assert.equal(e.protocol, "tcp");
    assert.equal(e.state, "ESTABLISHED");
    assert.equal(e.zone, 7);
    assert.deepEqual(e.original, { src: "fd00::1", dst: "fd00::2", sport: 1, dport: 443 });
    assert.equal(e.netns, undefined);
    // Plain data: a structured clone keeps every field.
    assert.deepEqual(structuredClone(e), e);
  });

  test("origTuple is the span of CTA_TUPLE_ORIG, header included", () => {
    const orig = tuple(A.TUPLE_ORIG, 17, { src: "1.2.3.4", dst: "5.6.7.8", sport: 1, dport: 2 });
    const payload = Buffer.concat([
      nfgenmsg(2),
      nlattr(A.STATUS, be32(8)),
      orig,
      tuple(A.TUPLE_REPLY, 17, { src: "5.6.7.8", dst: "1.2.3.4", sport: 2, dport: 1 }),
    ]);
    const d = new EntryDecoder();
    d.decode(payload, 0, payload.length);
    assert.deepEqual(
      payload.subarray(d.spans.origTuple.offset, d.spans.origTuple.offset + d.spans.origTuple.length),
      orig,
    );
  });

  test("attributes of unknown types are skipped; nested flags are masked", () => {
    const payload = Buffer.concat([
      entryPayload({ proto: 17, orig: { src: "1.1.1.1", dst: "2.2.2.2", sport: 3, dport: 4 } }),
      nest(30, nlattr(1, be32(1))),
    ]);
    assert.equal(decode(payload).reply.src, "2.2.2.2");
  });

  test("malformed input is a DecodeError, never a RangeError", () => {
    const good = entryPayload({ proto: 17, orig: { src: "1.1.1.1", dst: "2.2.2.2", sport: 3, dport: 4 } });
    assert.throws(() => decode(good.subarray(0, 2)), DecodeError);
    assert.throws(
      () => decode(Buffer.concat([Buffer.from([7, 0, 0, 0]), good.subarray(4)])),
      /address family 7/,
    );
    assert.throws(
      () => decode(Buffer.concat([nfgenmsg(2), tuple(A.TUPLE_ORIG, 17, { src: "1.1.1.1", dst: "2.2.2.2" })])),
      /both tuples/,
    );
    for (let cut = 5; cut < good.length; cut += 3) {
      const cutShort = Buffer.from(good.subarray(0, cut));
      assert.throws(() => decode(cutShort), DecodeError, `cut at ${cut}`);
    }
    // A short address payload.
    const shortAddr = Buffer.concat([
      nfgenmsg(2),
      nest(A.TUPLE_ORIG, nest(A.TUPLE_IP, nlattr(A.IP_V4_SRC, Buffer.from([1, 2])))),
    ]);
    assert.throws(() => decode(shortAddr), DecodeError);
  });
});
