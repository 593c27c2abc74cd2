/**
 * unix_diag: writeUnixDumpRequest against struct unix_diag_req, and decodeUnixDiagMsg on messages built
 * from struct unix_diag_msg and the UNIX_DIAG_* attributes of linux/unix_diag.h.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeUnixDiagMsg, writeUnixDumpRequest } from "../../src/diag/unix.js";
import { DecodeError, MessageWriter } from "../../src/netlink/index.js";
import {
  NLMSGHDR,
  nlattr,
  nlmsg,
  pack,
  SK_MEMINFO,
  UNIX_DIAG_MSG,
  UNIX_DIAG_REQ,
  u32,
  unpack,
} from "./layout.js";

// enum { UNIX_DIAG_NAME, UNIX_DIAG_VFS, ... } in linux/unix_diag.h: they start at 0.
const U = { NAME: 0, VFS: 1, PEER: 2, ICONS: 3, RQLEN: 4, MEMINFO: 5, SHUTDOWN: 6, UID: 7 };

describe("writeUnixDumpRequest", () => {
  test("struct nlmsghdr + struct unix_diag_req, field by field", () => {
    const w = new MessageWriter(Buffer.alloc(64, 0xaa));
    writeUnixDumpRequest(w, 0xa0b0c0d0, 0xfffffffe, 0x7f);
    const actual = w.buf.subarray(0, w.length);
    const req = {
      sdiag_family: 1, // AF_UNIX
      sdiag_protocol: 0,
      pad: 0,
      udiag_states: 0xfffffffe,
      udiag_ino: 0,
      udiag_show: 0x7f, // NAME|VFS|PEER|ICONS|RQLEN|MEMINFO|UID
      "udiag_cookie[0]": 0xffffffff,
      "udiag_cookie[1]": 0xffffffff,
    };
    assert.deepEqual(unpack(NLMSGHDR, actual), {
      nlmsg_len: 40,
      nlmsg_type: 20,
      nlmsg_flags: 0x301,
      nlmsg_seq: 0xa0b0c0d0,
      nlmsg_pid: 0,
    });
    assert.deepEqual(unpack(UNIX_DIAG_REQ, actual, 16), req);
    assert.deepEqual(actual, nlmsg({ type: 20, flags: 0x301, seq: 0xa0b0c0d0 }, pack(UNIX_DIAG_REQ, req)));
  });
});

const FIXED = {
  udiag_family: 1,
  udiag_type: 5,
  udiag_state: 10,
  udiag_ino: 0x01020304,
  "udiag_cookie[0]": 0x89abcdef,
  "udiag_cookie[1]": 0x01234567,
};

function msg(...attrs: Buffer[]): Buffer {
  return Buffer.concat([pack(UNIX_DIAG_MSG, FIXED), ...attrs]);
}

const decode = (b: Buffer) => decodeUnixDiagMsg(b, 0, b.length);

describe("decodeUnixDiagMsg", () => {
  test("the fixed fields of struct unix_diag_msg", () => {
    const s = decode(msg());
    assert.equal(s.family, "unix");
    assert.equal(s.type, "seqpacket");
    assert.equal(s.state, "listening");
    assert.equal(s.inode, 0x01020304);
    assert.equal(s.cookie, 0x0123456789abcdefn);
    assert.equal(s.name, undefined);
    assert.equal(s.peer, undefined);
  });

  test("udiag_type: SOCK_STREAM 1, SOCK_DGRAM 2, SOCK_SEQPACKET 5; anything else is a DecodeError", () => {
    const typed = (t: number) => pack(UNIX_DIAG_MSG, { ...FIXED, udiag_type: t });
    assert.deepEqual(
      [1, 2, 5].map((t) => decode(typed(t)).type),
      ["stream", "dgram", "seqpacket"],
    );
    for (const t of [0, 3, 4, 6, 255]) {
      assert.throws(
        () => decode(typed(t)),
        (err: unknown) =>
          err instanceof DecodeError &&
          err.what === "unix_diag_msg" &&
          err.offset === 1 &&
          err.message.includes(`type ${t}`),
      );
    }
  });

  test("every attribute: VFS, PEER, ICONS, RQLEN, MEMINFO, SHUTDOWN, UID", () => {
    const vfs = Buffer.concat([u32(0x1111), u32(0x2222)]); // struct unix_diag_vfs { udiag_vfs_ino; udiag_vfs_dev; }
    const rqlen = Buffer.concat([u32(3), u32(128)]); // struct unix_diag_rqlen { udiag_rqueue; udiag_wqueue; }
    const skmem = pack(SK_MEMINFO, Object.fromEntries(SK_MEMINFO.fields.map((x, i) => [x.name, 10 + i])));
    const s = decode(
      msg(
        nlattr(U.NAME, Buffer.from("/run/x.sock\0")),
        nlattr(U.VFS, vfs),
        nlattr(U.PEER, u32(4242)),
        nlattr(U.ICONS, Buffer.concat([u32(7), u32(8), u32(9)])),
        nlattr(U.RQLEN, rqlen),
        nlattr(U.MEMINFO, skmem),
        nlattr(U.SHUTDOWN, Buffer.from([2])),
        nlattr(U.UID, u32(65534)),
      ),
    );
    assert.equal(s.name, "/run/x.sock");
    assert.deepEqual(s.vfs, { ino: 0x1111, dev: 0x2222 });
    assert.equal(s.peer, 4242);
    assert.deepEqual(s.icons, [7, 8, 9]);
    assert.equal(s.rqueue, 3);
    assert.equal(s.wqueue, 128);
    assert.equal(s.skmem?.rmemAlloc, 10);
    assert.equal(s.skmem?.drops, 18);
    assert.equal(s.shutdown, 2);
    assert.equal(s.uid, 65534);
  });

  test("names: a path up to its NUL, an abstract name as @ with inner NULs as @, an empty ICONS list", () => {
    assert.equal(decode(msg(nlattr(U.NAME, Buffer.from("/tmp/a")))).name, "/tmp/a", "unterminated path");
    assert.equal(decode(msg(nlattr(U.NAME, Buffer.from("\0abstract")))).name, "@abstract");
    assert.equal(decode(msg(nlattr(U.NAME, Buffer.from("\0a\0b")))).name, "@a@b");
    assert.equal(decode(msg(nlattr(U.NAME, Buffer.from("\0")))).name, "@");
    assert.deepEqual(decode(msg(nlattr(U.ICONS, Buffer.alloc(0)))).icons, []);
  });

  test("names are UTF-8; where the text cannot say the bytes, nameBytes keeps them", () => {
    const bytesOf = (name: Buffer) => decode(msg(nlattr(U.NAME, name)));
    for (const name of ["/run/é ✓", "\0é", "/run/\uFFFD"])
      assert.equal(bytesOf(Buffer.from(name)).nameBytes, undefined);
    assert.equal(bytesOf(Buffer.from("\0é")).name, "@é");
    const invalid = Buffer.from([0x2f, 0x61, 0xff, 0x62]);
    const s = bytesOf(invalid);
    assert.equal(s.name, "/a\uFFFDb");
    assert.deepEqual(s.nameBytes, invalid);
    assert.deepEqual(JSON.parse(JSON.stringify(s)).nameBytes, invalid.toString("base64"));
    const inner = Buffer.from("\0a\0b");
    assert.deepEqual(bytesOf(inner).nameBytes, inner);
  });

  test("a path name does not read past its attribute", () => {
    const s = decode(msg(nlattr(U.NAME, Buffer.from("/ab")), nlattr(U.PEER, u32(1))));
    assert.equal(s.name, "/ab");
    assert.equal(s.peer, 1);
  });

  describe("short or malformed input is a DecodeError", () => {
    const cases: [string, Buffer, number, number, string, number][] = [
      ["15 bytes", msg(), 0, 15, "unix_diag_msg", 0],
      ["length past the buffer", msg(), 4, 16, "unix_diag_msg", 4],
      ["VFS of 4 bytes", msg(nlattr(U.VFS, u32(1))), 0, 24, "unix_diag_msg attributes", 20],
      ["RQLEN of 4 bytes", msg(nlattr(U.RQLEN, u32(1))), 0, 24, "unix_diag_msg attributes", 20],
      [
        "MEMINFO of 16 bytes",
        msg(nlattr(U.MEMINFO, Buffer.alloc(16))),
        0,
        36,
        "unix_diag_msg attributes",
        20,
      ],
      ["PEER of 2 bytes", msg(nlattr(U.PEER, Buffer.alloc(2))), 0, 24, "unix_diag_msg attributes", 20],
      ["UID of 0 bytes", msg(nlattr(U.UID, Buffer.alloc(0))), 0, 20, "unix_diag_msg attributes", 20],
      ["nla_len past the end", msg(Buffer.from([0x20, 0, 0, 0])), 0, 20, "unix_diag_msg attributes", 16],
    ];
    for (const [what, buf, o, len, struct, offset] of cases) {
      test(what, () => {
        assert.throws(
          () => decodeUnixDiagMsg(buf, o, len),
          (err: unknown) => err instanceof DecodeError && err.what === struct && err.offset === offset,
        );
      });
    }
  });
});
