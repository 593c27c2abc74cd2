/**
 * Property tests: random bytes, every truncation of the real captures and random corruptions of them,
 * fed to every decoder. Each may return or throw DecodeError — never RangeError or TypeError, never
 * loop without end (each test has a timeout, and attribute walks are counted).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decodeInetDiagMsg } from "../../src/diag/inet.js";
import { decodeTcpInfo } from "../../src/diag/tcpinfo.js";
import { decodeUnixDiagMsg } from "../../src/diag/unix.js";
import { AttributeReader, DecodeError } from "../../src/netlink/index.js";
import { loadFixture } from "../fixtures/fixtures.js";

const captures = ["inet-udp4.hex", "inet-tcp4.hex", "unix-stream-listener.hex"].map((n) => ({
  name: n,
  ...loadFixture(n),
}));
const inet = captures.filter((c) => c.name.startsWith("inet"));
const unix = captures.filter((c) => c.name.startsWith("unix"));

/** Run `decode`; a DecodeError is a fine answer, anything else thrown fails the property. */
function onlyDecodeError(decode: () => unknown): void {
  try {
    decode();
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
  }
}

const decodeInet = (b: Buffer, o: number, len: number) => () => {
  decodeInetDiagMsg(b, o, len, { protocol: "tcp", attributes: true });
  decodeInetDiagMsg(b, o, len, { protocol: "udp", attributes: true });
};
const decodeUnix = (b: Buffer, o: number, len: number) => () => decodeUnixDiagMsg(b, o, len);

/** A buffer and a range [offset, offset + length) inside it. */
const bytesWithRange = fc
  .uint8Array({ maxLength: 600 })
  .chain((a) =>
    fc
      .tuple(fc.constant(Buffer.from(a)), fc.nat({ max: a.length }))
      .chain(([b, o]) => fc.tuple(fc.constant(b), fc.constant(o), fc.nat({ max: b.length - o }))),
  );

/** A real message with a few bytes overwritten: lengths and types in unexpected places. */
function corrupted(bytes: Buffer) {
  return fc
    .array(fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 })), {
      minLength: 1,
      maxLength: 8,
    })
    .map((edits) => {
      const b = Buffer.from(bytes);
      for (const [at, v] of edits) b[at] = v;
      return b;
    });
}

const options = { timeout: 60_000 };

describe("decoders on random and damaged input throw only DecodeError", () => {
  test("decodeInetDiagMsg: random bytes, random range", options, () => {
    fc.assert(
      fc.property(bytesWithRange, ([b, o, len]) => onlyDecodeError(decodeInet(b, o, len))),
      { numRuns: 3000 },
    );
  });

  test("decodeInetDiagMsg: a random 72-byte header followed by random attributes", options, () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 72, maxLength: 800 }), (a) => {
        const b = Buffer.from(a);
        onlyDecodeError(decodeInet(b, 0, b.length));
      }),
      { numRuns: 3000 },
    );
  });

  test("decodeInetDiagMsg: every truncation of the real captures", options, () => {
    for (const c of inet) {
      for (let len = 0; len <= c.bytes.length; len++) {
        const b = Buffer.from(c.bytes.subarray(0, len)); // exactly `len` bytes: no slack to read into
        onlyDecodeError(decodeInet(b, 0, len));
      }
    }
  });

  test("decodeInetDiagMsg: real captures with random bytes overwritten", options, () => {
    for (const c of inet) {
      fc.assert(
        fc.property(corrupted(c.bytes), (b) => onlyDecodeError(decodeInet(b, 0, b.length))),
        { numRuns: 2000 },
      );
    }
  });

  test("decodeUnixDiagMsg: random bytes, random range", options, () => {
    fc.assert(
      fc.property(bytesWithRange, ([b, o, len]) => onlyDecodeError(decodeUnix(b, o, len))),
      { numRuns: 3000 },
    );
  });

  test("decodeUnixDiagMsg: a valid header followed by random attributes", options, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (a) => {
        const b = Buffer.concat([unix[0]!.bytes.subarray(0, 16), Buffer.from(a)]);
        onlyDecodeError(decodeUnix(b, 0, b.length));
      }),
      { numRuns: 3000 },
    );
  });

  test("decodeUnixDiagMsg: every truncation and random corruptions of the real capture", options, () => {
    for (const c of unix) {
      for (let len = 0; len <= c.bytes.length; len++) {
        onlyDecodeError(decodeUnix(Buffer.from(c.bytes.subarray(0, len)), 0, len));
      }
      fc.assert(
        fc.property(corrupted(c.bytes), (b) => onlyDecodeError(decodeUnix(b, 0, b.length))),
        { numRuns: 2000 },
      );
    }
  });

  test("decodeTcpInfo: random bytes, any range inside the buffer, never throws", options, () => {
    fc.assert(
      fc.property(bytesWithRange, ([b, o, len]) => {
        const info = decodeTcpInfo(b, o, len);
        assert.equal(typeof info, "object");
      }),
      { numRuns: 3000 },
    );
  });

  test("AttributeReader: random bytes are walked to an end, getters never throw", options, () => {
    const a = new AttributeReader();
    fc.assert(
      fc.property(bytesWithRange, ([b, o, len]) => {
        a.reset(b, o, o + len, "fuzz");
        let steps = 0;
        while (a.next()) {
          steps++;
          assert.ok(steps <= len / 4, "each step consumes at least 4 bytes");
          assert.ok(a.offset >= o && a.offset + a.length <= o + len, "the payload lies inside the range");
          a.u8();
          a.u32();
          a.u64();
          a.string();
        }
        assert.ok(a.error === undefined || a.error instanceof DecodeError);
      }),
      { numRuns: 5000 },
    );
  });
});
