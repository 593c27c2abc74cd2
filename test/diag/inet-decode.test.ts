/**
 * decodeInetDiagMsg on messages built by test/diag/layout.ts from linux/inet_diag.h: every fixed field
 * with distinct values, every attribute sockdiag reads (numbered as the header's enum numbers them),
 * and the DecodeErrors for short or malformed input.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeInetDiagMsg } from "../../src/diag/inet.js";
import { DecodeError } from "../../src/netlink/index.js";
import {
  INET_DIAG_MEMINFO,
  INET_DIAG_MSG,
  nlattr,
  pack,
  SK_MEMINFO,
  TCP_INFO,
  u32,
  u64,
  type Values,
} from "./layout.js";

// enum { INET_DIAG_NONE, INET_DIAG_MEMINFO, ... } in linux/inet_diag.h, counted from the header.
const A = {
  MEMINFO: 1,
  INFO: 2,
  CONG: 4,
  TOS: 5,
  TCLASS: 6,
  SKMEMINFO: 7,
  SHUTDOWN: 8,
  PROTOCOL: 10,
  SKV6ONLY: 11,
  LOCALS: 12,
  PEERS: 13,
  MARK: 15,
  CGROUP_ID: 21,
  SOCKOPT: 22,
};

const FIXED: Values = {
  idiag_family: 10,
  idiag_state: 10,
  idiag_timer: 1,
  idiag_retrans: 3,
  "id.idiag_sport": 0x1234,
  "id.idiag_dport": 0xabcd,
  "id.idiag_src[0]": 0x20010db8,
  "id.idiag_src[1]": 0,
  "id.idiag_src[2]": 0,
  "id.idiag_src[3]": 1,
  "id.idiag_dst[0]": 0,
  "id.idiag_dst[1]": 0,
  "id.idiag_dst[2]": 0xffff,
  "id.idiag_dst[3]": 0x0a000002,
  "id.idiag_if": 0x01020304,
  "id.idiag_cookie[0]": 0x89abcdef,
  "id.idiag_cookie[1]": 0x01234567,
  idiag_expires: 0x11121314,
  idiag_rqueue: 0x21222324,
  idiag_wqueue: 0x31323334,
  idiag_uid: 0x41424344,
  idiag_inode: 0x51525354,
};

const decode = (b: Buffer, protocol: "tcp" | "udp" = "tcp", attributes = true) =>
  decodeInetDiagMsg(b, 0, b.length, { protocol, attributes });

describe("decodeInetDiagMsg: struct inet_diag_msg", () => {
  test("every fixed field, in its byte order", () => {
    const s = decode(pack(INET_DIAG_MSG, FIXED));
    assert.equal(s.family, "inet6");
    assert.equal(s.protocol, "tcp");
    assert.equal(s.stateCode, 10);
    assert.equal(s.state, "listening");
    assert.equal(s.timer, 1);
    assert.equal(s.retrans, 3);
    assert.equal(s.sport, 0x1234);
    assert.equal(s.dport, 0xabcd);
    assert.deepEqual([s.srcWords[0], s.srcWords[1], s.srcWords[2], s.srcWords[3]], [0x20010db8, 0, 0, 1]);
    assert.deepEqual(
      [s.dstWords[0], s.dstWords[1], s.dstWords[2], s.dstWords[3]],
      [0, 0, 0xffff, 0x0a000002],
    );
    assert.equal(s.src, "2001:db8::1");
    assert.equal(s.dst, "::ffff:10.0.0.2");
    assert.equal(s.ifindex, 0x01020304);
    assert.equal(s.cookie, 0x0123456789abcdefn);
    assert.equal(s.expires, 0x11121314);
    assert.equal(s.rqueue, 0x21222324);
    assert.equal(s.wqueue, 0x31323334);
    assert.equal(s.uid, 0x41424344);
    assert.equal(s.inode, 0x51525354);
  });

  test("AF_INET: only the first address word counts", () => {
    const s = decode(
      pack(INET_DIAG_MSG, { idiag_family: 2, "id.idiag_src[0]": 0x7f000001, "id.idiag_dst[0]": 0xc0a80001 }),
    );
    assert.equal(s.family, "inet");
    assert.equal(s.src, "127.0.0.1");
    assert.equal(s.dst, "192.168.0.1");
    assert.deepEqual([...s.dstWords], [0xc0a80001, 0, 0, 0]);
  });

  test("the message may sit at any offset in the buffer", () => {
    const msg = pack(INET_DIAG_MSG, { idiag_family: 2, idiag_inode: 77 });
    const buf = Buffer.concat([Buffer.alloc(20, 0xff), msg, Buffer.alloc(20, 0xff)]);
    assert.equal(decodeInetDiagMsg(buf, 20, 72, { protocol: "udp", attributes: true }).inode, 77);
  });

  test("fewer than 72 bytes, or a length past the buffer, is a DecodeError naming inet_diag_msg", () => {
    const msg = pack(INET_DIAG_MSG, FIXED);
    for (const [o, len, buf] of [
      [0, 71, msg],
      [0, 0, msg],
      [1, 72, msg],
      [0, 76, msg],
    ] as const) {
      assert.throws(
        () => decodeInetDiagMsg(buf, o, len, { protocol: "tcp", attributes: true }),
        (err: unknown) => err instanceof DecodeError && err.what === "inet_diag_msg" && err.offset === o,
        `offset ${o} length ${len}`,
      );
    }
  });
});

/** struct tcp_info with every field set to a value derived from its offset. */
function tcpInfo(): Buffer {
  const v: Values = {};
  for (const x of TCP_INFO.fields)
    v[x.name] =
      x.kind === "u64"
        ? 0x1_0000_0000n + BigInt(x.offset)
        : x.kind === "u8"
          ? x.offset + 1
          : 0x1000 + x.offset;
  v["tcpi_snd_wscale:4,tcpi_rcv_wscale:4"] = 0x7a;
  v["tcpi_delivery_rate_app_limited:1,tcpi_fastopen_client_fail:2"] = 0b101;
  return pack(TCP_INFO, v);
}

function withAttributes(...attrs: Buffer[]): Buffer {
  return Buffer.concat([pack(INET_DIAG_MSG, FIXED), ...attrs]);
}

describe("decodeInetDiagMsg: attributes", () => {
  test("MEMINFO, SKMEMINFO, CONG, TOS, TCLASS, SHUTDOWN, MARK, CGROUP_ID", () => {
    const mem = pack(INET_DIAG_MEMINFO, { idiag_rmem: 1, idiag_wmem: 2, idiag_fmem: 3, idiag_tmem: 4 });
    const skmem = pack(SK_MEMINFO, Object.fromEntries(SK_MEMINFO.fields.map((x, i) => [x.name, 100 + i])));
    const s = decode(
      withAttributes(
        nlattr(A.MEMINFO, mem),
        nlattr(A.SKMEMINFO, skmem),
        nlattr(A.CONG, Buffer.from("cubic\0")),
        nlattr(A.TOS, Buffer.from([0x10])),
        nlattr(A.TCLASS, Buffer.from([0x20])),
        nlattr(A.SHUTDOWN, Buffer.from([3])),
        nlattr(A.MARK, u32(0xcafe)),
        nlattr(A.CGROUP_ID, u64(0x1_2345_6789n)),
      ),
    );
    assert.deepEqual(s.meminfo, { rmem: 1, wmem: 2, fmem: 3, tmem: 4 });
    assert.deepEqual(s.skmem, {
      rmemAlloc: 100,
      rcvbuf: 101,
      wmemAlloc: 102,
      sndbuf: 103,
      fwdAlloc: 104,
      wmemQueued: 105,
      optmem: 106,
      backlog: 107,
      drops: 108,
    });
    assert.equal(s.cong, "cubic");
    assert.equal(s.tos, 0x10);
    assert.equal(s.tclass, 0x20);
    assert.equal(s.shutdown, 3);
    assert.equal(s.mark, 0xcafe);
    assert.equal(s.cgroupId, 0x1_2345_6789n);
  });

  test("INET_DIAG_PROTOCOL is attribute 10 (raw sockets' protocol)", () => {
    const s = decode(withAttributes(nlattr(A.PROTOCOL, Buffer.from([1]))), "udp");
    assert.equal(s.rawProtocol, 1);
  });

  test("INET_DIAG_SKV6ONLY is attribute 11", () => {
    assert.equal(decode(withAttributes(nlattr(A.SKV6ONLY, Buffer.from([1])))).v6only, true);
    assert.equal(decode(withAttributes(nlattr(A.SKV6ONLY, Buffer.from([0])))).v6only, false);
  });

  test("INET_DIAG_LOCALS (12) and INET_DIAG_PEERS (13), SCTP address lists, are not mistaken for others", () => {
    const s = decode(withAttributes(nlattr(A.LOCALS, Buffer.from([2])), nlattr(A.PEERS, Buffer.from([1]))));
    assert.equal(s.rawProtocol, undefined);
    assert.equal(s.v6only, undefined);
  });

  test("an 8-entry SKMEMINFO (older kernels) has no drops", () => {
    const skmem = pack(SK_MEMINFO, { SK_MEMINFO_RCVBUF: 5, SK_MEMINFO_DROPS: 9 }).subarray(0, 32);
    const s = decode(withAttributes(nlattr(A.SKMEMINFO, skmem)));
    assert.equal(s.skmem?.rcvbuf, 5);
    assert.equal(s.skmem?.backlog, 0);
    assert.equal("drops" in (s.skmem ?? {}), false);
  });

  test("INFO is struct tcp_info for TCP and ignored for other protocols", () => {
    const info = tcpInfo();
    const tcp = decode(withAttributes(nlattr(A.INFO, info)), "tcp");
    assert.equal(tcp.tcpinfo?.state, 1);
    assert.equal(tcp.tcpinfo?.rto, 0x1000 + 8);
    assert.equal(tcp.tcpinfo?.sndWnd, 0x1000 + 228);
    assert.equal(decode(withAttributes(nlattr(A.INFO, info)), "udp").tcpinfo, undefined);
  });

  test("unknown and unread attributes (SOCKOPT 22, 999) are skipped", () => {
    const s = decode(
      withAttributes(
        nlattr(A.SOCKOPT, u32(0xffff)),
        nlattr(999, Buffer.alloc(3)),
        nlattr(A.SHUTDOWN, Buffer.from([1])),
      ),
    );
    assert.equal(s.shutdown, 1);
  });

  test("attributes: false leaves them unread, even malformed ones", () => {
    const s = decode(withAttributes(nlattr(A.MARK, u32(1)), Buffer.from([0xff, 0xff, 0, 0])), "tcp", false);
    assert.equal(s.mark, undefined);
    assert.equal(s.inode, 0x51525354);
  });

  describe("a short or malformed attribute is a DecodeError naming the attributes and the offset", () => {
    const cases: [string, Buffer, number][] = [
      ["MEMINFO of 12 bytes", nlattr(A.MEMINFO, Buffer.alloc(12)), 76],
      ["SKMEMINFO of 28 bytes", nlattr(A.SKMEMINFO, Buffer.alloc(28)), 76],
      ["MARK of 2 bytes", nlattr(A.MARK, Buffer.alloc(2)), 76],
      ["CGROUP_ID of 4 bytes", nlattr(A.CGROUP_ID, Buffer.alloc(4)), 76],
      ["SHUTDOWN of 0 bytes", nlattr(A.SHUTDOWN, Buffer.alloc(0)), 76],
      ["nla_len past the message", Buffer.from([0x40, 0, A.MARK, 0]), 72],
      ["two trailing bytes", Buffer.alloc(2), 72],
    ];
    for (const [what, attr, offset] of cases) {
      test(what, () => {
        assert.throws(
          () => decode(withAttributes(attr)),
          (err: unknown) =>
            err instanceof DecodeError && err.what === "inet_diag_msg attributes" && err.offset === offset,
        );
      });
    }
  });
});
