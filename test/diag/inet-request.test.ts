/**
 * inet_diag requests (writeInetDumpRequest, writeDestroyRequest) checked field by field against
 * struct nlmsghdr + struct inet_diag_req_v2 (+ attributes) as test/diag/layout.ts builds them from the
 * headers; and the destroy request's sockid read back through decodeInetDiagMsg (a round trip).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decodeInetDiagMsg, writeDestroyRequest, writeInetDumpRequest } from "../../src/diag/inet.js";
import type { InetSocket } from "../../src/diag/socket.js";
import { MessageWriter } from "../../src/netlink/index.js";
import { socketFromWords } from "../kit/socket-words.js";
import { arbitraryInetSocket } from "./arbitraries.js";
import {
  INET_DIAG_MSG,
  INET_DIAG_REQ_V2,
  NLMSGHDR,
  nlattr,
  nlmsg,
  pack,
  u32,
  unpack,
  type Values,
} from "./layout.js";

// Values quoted from the headers, not imported from src/.
const SOCK_DIAG_BY_FAMILY = 20; // linux/sock_diag.h
const SOCK_DESTROY = 21; // linux/sock_diag.h
const NLM_F_REQUEST = 0x1; // linux/netlink.h
const NLM_F_ACK = 0x4;
const NLM_F_DUMP = 0x300; // NLM_F_ROOT | NLM_F_MATCH
const INET_DIAG_REQ_BYTECODE = 1; // linux/inet_diag.h enum { INET_DIAG_REQ_NONE, INET_DIAG_REQ_BYTECODE, ... }
const INET_DIAG_REQ_PROTOCOL = 3;
const NOCOOKIE = 0xffffffff; // #define INET_DIAG_NOCOOKIE (~0U)
const AF_INET = 2;
const AF_INET6 = 10;

function write(fill: (w: MessageWriter) => void): Buffer {
  const w = new MessageWriter(Buffer.alloc(512, 0xaa));
  fill(w);
  return Buffer.from(w.buf.subarray(0, w.length));
}

/** Assert every field of both structs, so a failure names the field, then the whole message. */
function assertRequest(actual: Buffer, hdr: Values, req: Values, expected: Buffer): void {
  assert.deepEqual(unpack(NLMSGHDR, actual), unpack(NLMSGHDR, pack(NLMSGHDR, hdr)));
  assert.deepEqual(
    unpack(INET_DIAG_REQ_V2, actual, 16),
    unpack(INET_DIAG_REQ_V2, pack(INET_DIAG_REQ_V2, req)),
  );
  assert.deepEqual(actual, expected);
}

const dumpId = { "id.idiag_cookie[0]": NOCOOKIE, "id.idiag_cookie[1]": NOCOOKIE };

describe("writeInetDumpRequest", () => {
  test("UDP over IPv4, ESTABLISHED, MEMINFO|SKMEMINFO: no attributes, id zero but for NOCOOKIE", () => {
    const actual = write((w) =>
      writeInetDumpRequest(w, 0x01020304, { family: AF_INET, protocol: 17, ext: 0x41, states: 0x2 }),
    );
    const hdr = {
      nlmsg_len: 72,
      nlmsg_type: SOCK_DIAG_BY_FAMILY,
      nlmsg_flags: NLM_F_REQUEST | NLM_F_DUMP,
      nlmsg_seq: 0x01020304,
    };
    const req = { sdiag_family: AF_INET, sdiag_protocol: 17, idiag_ext: 0x41, idiag_states: 0x2, ...dumpId };
    assertRequest(
      actual,
      hdr,
      req,
      nlmsg({ type: 20, flags: 0x301, seq: 0x01020304 }, pack(INET_DIAG_REQ_V2, req)),
    );
  });

  test("idiag_states keeps every bit, host order", () => {
    const actual = write((w) =>
      writeInetDumpRequest(w, 1, { family: AF_INET6, protocol: 6, ext: 0, states: 0xfffffffe }),
    );
    assert.equal(unpack(INET_DIAG_REQ_V2, actual, 16).idiag_states, 0xfffffffe);
    assert.equal(actual[16 + 4], 0xfe, "low byte first");
  });

  test("MPTCP (262): protocol byte 262 & 0xff, then INET_DIAG_REQ_PROTOCOL u32 262", () => {
    const actual = write((w) =>
      writeInetDumpRequest(w, 5, { family: AF_INET6, protocol: 262, ext: 2, states: 0x400 }),
    );
    const req = {
      sdiag_family: AF_INET6,
      sdiag_protocol: 262 & 0xff,
      idiag_ext: 2,
      idiag_states: 0x400,
      ...dumpId,
    };
    const hdr = { nlmsg_len: 16 + 56 + 8, nlmsg_type: 20, nlmsg_flags: 0x301, nlmsg_seq: 5 };
    const expected = nlmsg(
      { type: 20, flags: 0x301, seq: 5 },
      pack(INET_DIAG_REQ_V2, req),
      nlattr(INET_DIAG_REQ_PROTOCOL, u32(262)),
    );
    assertRequest(actual, hdr, req, expected);
    assert.deepEqual(
      [actual.readUInt16LE(72), actual.readUInt16LE(74), actual.readUInt32LE(76)],
      [8, 3, 262],
    );
  });

  test("bytecode travels verbatim in INET_DIAG_REQ_BYTECODE, before the protocol attribute", () => {
    // INET_DIAG_BC_S_GE (2) yes 8 no 12, then the port op { 0, 0, 1024 }.
    const bytecode = Buffer.from([2, 8, 12, 0, 0, 0, 0x00, 0x04]);
    const actual = write((w) =>
      writeInetDumpRequest(w, 6, { family: AF_INET, protocol: 262, ext: 0, states: 0xfff, bytecode }),
    );
    const req = { sdiag_family: AF_INET, sdiag_protocol: 6, idiag_states: 0xfff, ...dumpId };
    const hdr = { nlmsg_len: 16 + 56 + 12 + 8, nlmsg_type: 20, nlmsg_flags: 0x301, nlmsg_seq: 6 };
    const expected = nlmsg(
      { type: 20, flags: 0x301, seq: 6 },
      pack(INET_DIAG_REQ_V2, req),
      nlattr(INET_DIAG_REQ_BYTECODE, bytecode),
      nlattr(INET_DIAG_REQ_PROTOCOL, u32(262)),
    );
    assertRequest(actual, hdr, req, expected);
  });

  test("an unaligned bytecode buffer is padded and nla_len keeps its true length", () => {
    const actual = write((w) =>
      writeInetDumpRequest(w, 7, {
        family: AF_INET,
        protocol: 6,
        ext: 0,
        states: 2,
        bytecode: Buffer.from([0, 4, 8]),
      }),
    );
    assert.equal(actual.readUInt16LE(72), 7);
    assert.equal(actual.readUInt32LE(0), 16 + 56 + 8);
    assert.equal(actual.length, 80);
  });
});

/** An InetSocket with every sockid field distinct, so a swapped or misordered field shows. */
function sample(family: "inet" | "inet6"): InetSocket {
  return socketFromWords({
    family,
    protocol: "tcp",
    sport: 0x1234,
    dport: 0xabcd,
    srcWords: family === "inet" ? [0x7f000001, 0, 0, 0] : [0x20010db8, 0x11, 0x22, 0x33],
    dstWords: family === "inet" ? [0x0a000002, 0, 0, 0] : [0xfe800000, 0x44, 0x55, 0x66],
    ifindex: 0x01020304,
    cookie: 0x0123456789abcdefn,
  });
}

function sockidValues(s: InetSocket, prefix: string): Values {
  return {
    [`${prefix}idiag_sport`]: s.sport,
    [`${prefix}idiag_dport`]: s.dport,
    [`${prefix}idiag_src[0]`]: s.srcWords[0],
    [`${prefix}idiag_src[1]`]: s.srcWords[1],
    [`${prefix}idiag_src[2]`]: s.srcWords[2],
    [`${prefix}idiag_src[3]`]: s.srcWords[3],
    [`${prefix}idiag_dst[0]`]: s.dstWords[0],
    [`${prefix}idiag_dst[1]`]: s.dstWords[1],
    [`${prefix}idiag_dst[2]`]: s.dstWords[2],
    [`${prefix}idiag_dst[3]`]: s.dstWords[3],
    [`${prefix}idiag_if`]: s.ifindex,
    [`${prefix}idiag_cookie[0]`]: Number(s.cookie & 0xffffffffn),
    [`${prefix}idiag_cookie[1]`]: Number(s.cookie >> 32n),
  };
}

describe("writeDestroyRequest", () => {
  for (const family of ["inet", "inet6"] as const) {
    test(`${family}: SOCK_DESTROY with REQUEST|ACK and the full sockid`, () => {
      const s = sample(family);
      const actual = write((w) => writeDestroyRequest(w, 0x7fffffff, s, 17));
      const req = {
        sdiag_family: family === "inet" ? AF_INET : AF_INET6,
        sdiag_protocol: 17,
        ...sockidValues(s, "id."),
      };
      const hdr = {
        nlmsg_len: 72,
        nlmsg_type: SOCK_DESTROY,
        nlmsg_flags: NLM_F_REQUEST | NLM_F_ACK,
        nlmsg_seq: 0x7fffffff,
      };
      assertRequest(
        actual,
        hdr,
        req,
        nlmsg({ type: 21, flags: 5, seq: 0x7fffffff }, pack(INET_DIAG_REQ_V2, req)),
      );
    });
  }

  test("byte order on the wire: ports and addresses big-endian, ifindex and cookie host order, cookie low word first", () => {
    const actual = write((w) => writeDestroyRequest(w, 1, sample("inet"), 6));
    const id = 16 + 8;
    assert.equal(actual.toString("hex", id, id + 4), "1234abcd", "sport, dport");
    assert.equal(actual.toString("hex", id + 4, id + 8), "7f000001", "127.0.0.1");
    assert.equal(actual.toString("hex", id + 8, id + 20), "00".repeat(12), "the rest of an IPv4 src is zero");
    assert.equal(actual.toString("hex", id + 20, id + 24), "0a000002", "10.0.0.2");
    assert.equal(actual.toString("hex", id + 36, id + 40), "04030201", "ifindex 0x01020304, little-endian");
    assert.equal(
      actual.toString("hex", id + 40, id + 48),
      "efcdab8967452301",
      "cookie 0x0123456789abcdef as two LE words, low first",
    );
  });

  test("ext and states are zero: a destroy names one socket", () => {
    const actual = write((w) => writeDestroyRequest(w, 1, sample("inet6"), 6));
    assert.deepEqual([actual[16 + 2], actual[16 + 3], actual.readUInt32LE(16 + 4)], [0, 0, 0]);
  });

  test("MPTCP destroy carries INET_DIAG_REQ_PROTOCOL", () => {
    const s = sample("inet");
    const actual = write((w) => writeDestroyRequest(w, 2, s, 262));
    const req = { sdiag_family: AF_INET, sdiag_protocol: 6, ...sockidValues(s, "id.") };
    const hdr = { nlmsg_len: 80, nlmsg_type: 21, nlmsg_flags: 5, nlmsg_seq: 2 };
    assertRequest(
      actual,
      hdr,
      req,
      nlmsg({ type: 21, flags: 5, seq: 2 }, pack(INET_DIAG_REQ_V2, req), nlattr(3, u32(262))),
    );
  });

  test("a batch: destroy requests back to back, each 72 bytes, in order", () => {
    const sockets = [sample("inet"), sample("inet6"), sample("inet")];
    const actual = write((w) => {
      for (const [i, s] of sockets.entries()) writeDestroyRequest(w, 100 + i, s, 17);
    });
    assert.equal(actual.length, 3 * 72);
    assert.deepEqual(
      [0, 72, 144].map((o) => unpack(NLMSGHDR, actual, o).nlmsg_seq),
      [100, 101, 102],
    );
  });
});

describe("round trip: writeDestroyRequest's sockid read back by decodeInetDiagMsg", () => {
  test("every InetSocket id survives, for random field values", () => {
    fc.assert(
      fc.property(arbitraryInetSocket, (s) => {
        const family = s.family;
        const req = write((w) => writeDestroyRequest(w, 1, s, 17));
        // inet_diag_msg: the four u8 fields, then the request's sockid bytes unchanged, then five u32.
        const head = pack(INET_DIAG_MSG, {
          idiag_family: family === "inet" ? AF_INET : AF_INET6,
          idiag_state: 1,
        });
        req.copy(head, 4, 16 + 8, 16 + 8 + 48);
        const back = decodeInetDiagMsg(head, 0, head.length, { protocol: "udp", attributes: true });
        assert.deepEqual(sockidValues(back, ""), sockidValues(s, ""));
        assert.equal(back.family, family);
        assert.equal(back.cookie, s.cookie);
      }),
    );
  });
});
