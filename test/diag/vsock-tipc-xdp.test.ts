/**
 * vsock_diag, tipc_diag and xdp_diag: the dump requests against their structs, and the decoders on
 * answers built field by field from linux/vm_sockets_diag.h, linux/tipc_netlink.h (with the
 * nesting of the kernel's tipc_sk_fill_sock_diag) and linux/xdp_diag.h. Every field carries a
 * value of its own, so a field read at another's offset shows.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { writeFamilyDumpRequest } from "../../src/diag/family-request.js";
import { decodeTipcDiagMsg } from "../../src/diag/tipc.js";
import { decodeVsockDiagMsg } from "../../src/diag/vsock.js";
import { decodeXdpDiagMsg } from "../../src/diag/xdp.js";
import { DecodeError, MessageWriter } from "../../src/netlink/index.js";
import { xdpAnswer } from "./family-answers.js";
import {
  nlattr,
  nlmsg,
  PACKET_DIAG_REQ,
  pack,
  TIPC_SOCK_DIAG_REQ,
  u32,
  u64,
  VSOCK_DIAG_MSG,
  VSOCK_DIAG_REQ,
  XDP_DIAG_MSG,
} from "./layout.js";

const NLA_F_NESTED = 0x8000;
const request = (protocol: Parameters<typeof writeFamilyDumpRequest>[2], states = 0) => {
  const w = new MessageWriter(Buffer.alloc(64, 0xaa));
  writeFamilyDumpRequest(w, 7, protocol, states);
  return w.buf.subarray(0, w.length);
};

describe("dump requests", () => {
  test("vsock_diag_req carries the states; tipc_sock_diag_req is states only", () => {
    const vsock = pack(VSOCK_DIAG_REQ, { sdiag_family: 40, vdiag_states: 0x482 });
    assert.deepEqual(request("vsock", 0x482), nlmsg({ type: 20, flags: 0x301, seq: 7 }, vsock));
    const tipc = pack(TIPC_SOCK_DIAG_REQ, { sdiag_family: 30, tidiag_states: 0x482 });
    assert.deepEqual(request("tipc", 0x482), nlmsg({ type: 20, flags: 0x301, seq: 7 }, tipc));
  });

  test("xdp_diag_req asks for what ss shows: INFO|RING_CFG|UMEM|MEMINFO|STATS", () => {
    const req = pack(PACKET_DIAG_REQ, { sdiag_family: 44, pdiag_show: 0x01 | 0x02 | 0x04 | 0x08 | 0x10 });
    assert.deepEqual(request("xdp", 0x80), nlmsg({ type: 20, flags: 0x301, seq: 7 }, req));
  });
});

describe("decodeVsockDiagMsg", () => {
  test("every field of struct vsock_diag_msg, at its offset", () => {
    const b = pack(VSOCK_DIAG_MSG, {
      vdiag_family: 40,
      vdiag_type: 1,
      vdiag_state: 10,
      vdiag_shutdown: 2,
      vdiag_src_cid: 3,
      vdiag_src_port: 1234,
      vdiag_dst_cid: 0xffffffff,
      vdiag_dst_port: 0xfffffffe,
      vdiag_ino: 777,
      "vdiag_cookie[0]": 0x89abcdef,
      "vdiag_cookie[1]": 0x1,
    });
    const s = decodeVsockDiagMsg(b, 0, b.length);
    assert.deepEqual(
      [s.family, s.protocol, s.type, s.state, s.shutdown, s.srcCid, s.srcPort, s.dstCid, s.dstPort],
      ["vsock", "vsock", "stream", "listening", 2, 3, 1234, 0xffffffff, 0xfffffffe],
    );
    assert.deepEqual([s.inode, s.cookie, s.rqueue, s.wqueue], [777, 0x189abcdefn, 0, 0]);
  });

  test("dgram and seqpacket sockets; a short message or an unknown type is a DecodeError", () => {
    const dgram = pack(VSOCK_DIAG_MSG, { vdiag_family: 40, vdiag_type: 2, vdiag_state: 7 });
    assert.deepEqual(
      [decodeVsockDiagMsg(dgram, 0, 32).type, decodeVsockDiagMsg(dgram, 0, 32).state],
      ["dgram", "close"],
    );
    const seq = pack(VSOCK_DIAG_MSG, { vdiag_family: 40, vdiag_type: 5, vdiag_state: 1 });
    assert.equal(decodeVsockDiagMsg(seq, 0, 32).type, "seqpacket");
    assert.throws(() => decodeVsockDiagMsg(dgram, 0, 31), DecodeError);
    const raw = pack(VSOCK_DIAG_MSG, { vdiag_family: 40, vdiag_type: 3 });
    assert.throws(() => decodeVsockDiagMsg(raw, 0, 32), /vsock_diag_msg.*unknown socket type 3/);
  });
});

/** The TIPC_NLA_SOCK nest of a connected SOCK_STREAM socket, in the kernel's order. */
function tipcSock(extra: Buffer[] = [], type = 1): Buffer {
  const con = nlattr(
    3 | NLA_F_NESTED,
    Buffer.concat([
      nlattr(2, u32(0x1001002)),
      nlattr(3, u32(0xabc)),
      nlattr(1, Buffer.alloc(0)),
      nlattr(4, u32(18888)),
      nlattr(5, u32(17)),
    ]),
  );
  const stat = nlattr(
    5 | NLA_F_NESTED,
    Buffer.concat([nlattr(0, u32(3)), nlattr(1, u32(4)), nlattr(4, u32(5)), nlattr(3, Buffer.alloc(0))]),
  );
  return nlattr(
    2 | NLA_F_NESTED,
    Buffer.concat([
      nlattr(2, u32(0x2a)), // REF
      nlattr(1, u32(0x1001001)), // ADDR
      con,
      nlattr(6, u32(type)), // TYPE
      nlattr(9, u32(1)), // TIPC_STATE: established
      nlattr(7, u32(4321)), // INO
      nlattr(8, u32(1000)), // UID
      nlattr(11, Buffer.alloc(0)), // PAD, where the u64 needs aligning
      nlattr(10, u64(0x1122334455n)), // COOKIE
      stat,
      ...extra,
    ]),
  );
}

describe("decodeTipcDiagMsg", () => {
  test("TIPC_NLA_SOCK with its CON and STAT nests (NLA_F_NESTED set), every attribute its own value", () => {
    const b = tipcSock();
    const s = decodeTipcDiagMsg(b, 0, b.length);
    assert.ok(s);
    assert.deepEqual(
      [s.family, s.type, s.state, s.node, s.ref, s.inode, s.uid, s.cookie],
      ["tipc", "stream", "established", 0x1001001, 0x2a, 4321, 1000, 0x1122334455n],
    );
    assert.deepEqual(s.connection, { node: 0x1001002, port: 0xabc, service: { type: 18888, instance: 17 } });
    assert.deepEqual(
      [s.rqueue, s.wqueue, s.drops, s.linkCongested, s.connCongested, s.published, s.group],
      [3, 4, 5, false, true, false, undefined],
    );
  });

  test("a published RDM socket with a group; its nest's ids start at 0 as tipc_netlink.h numbers them", () => {
    const group = nlattr(
      12 | NLA_F_NESTED,
      Buffer.concat([
        nlattr(0, u32(4711)),
        nlattr(4, u32(9)),
        nlattr(5, u32(33)),
        nlattr(3, Buffer.alloc(0)),
        nlattr(1, Buffer.alloc(0)),
      ]),
    );
    const sock = nlattr(
      2,
      Buffer.concat([
        nlattr(2, u32(7)),
        nlattr(1, u32(8)),
        nlattr(4, Buffer.alloc(0)),
        nlattr(6, u32(4)),
        nlattr(9, u32(7)),
        group,
      ]),
    );
    const s = decodeTipcDiagMsg(sock, 0, sock.length);
    assert.ok(s);
    assert.deepEqual([s.type, s.state, s.published, s.connection], ["rdm", "close", true, undefined]);
    assert.deepEqual(s.group, { id: 4711, instance: 9, bcSendNext: 33, scope: "cluster", open: true });
  });

  test("the empty message of a socket in a state not asked for decodes to none", () => {
    assert.equal(decodeTipcDiagMsg(Buffer.alloc(0), 0, 0), undefined);
  });

  test("no or an unknown socket type, or a short attribute, is a DecodeError", () => {
    const none = nlattr(2, nlattr(2, u32(1)));
    assert.throws(() => decodeTipcDiagMsg(none, 0, none.length), /no TIPC_NLA_SOCK_TYPE/);
    const raw = tipcSock([], 3);
    assert.throws(() => decodeTipcDiagMsg(raw, 0, raw.length), /unknown socket type 3/);
    const short = nlattr(2, Buffer.concat([nlattr(6, u32(2)), nlattr(7, Buffer.alloc(2))]));
    assert.throws(() => decodeTipcDiagMsg(short, 0, short.length), DecodeError);
    const cut = tipcSock();
    assert.throws(() => decodeTipcDiagMsg(cut, 0, cut.length - 4), DecodeError);
  });
});

describe("decodeXdpDiagMsg", () => {
  const fixed = pack(XDP_DIAG_MSG, {
    xdiag_family: 44,
    xdiag_type: 3,
    xdiag_ino: 991,
    "xdiag_cookie[0]": 0x10,
    "xdiag_cookie[1]": 0x2,
  });
  const _ring = (entries: number) => u32(entries);

  test("struct xdp_diag_msg and every attribute xsk_diag_fill puts", () => {
    const b = xdpAnswer(true);
    const s = decodeXdpDiagMsg(b, 0, b.length);
    assert.deepEqual(
      [s.family, s.type, s.state, s.inode, s.cookie, s.ifindex, s.queueId, s.uid, s.rqueue, s.wqueue],
      ["xdp", "raw", "close", 991, 0x200000010n, 5, 2, 1001, 640, 0],
    );
    assert.deepEqual(
      [s.rxRing, s.txRing, s.fillRing, s.completionRing],
      [{ entries: 2048 }, { entries: 1024 }, { entries: 512 }, { entries: 256 }],
    );
    assert.deepEqual(s.umem, {
      id: 11,
      size: 0x1_0000_0000n,
      numPages: 12,
      chunkSize: 13,
      headroom: 14,
      ifindex: 15,
      queueId: 16,
      flags: 1,
      refs: 17,
    });
    assert.equal(s.skmem?.rcvbuf, 650);
    assert.deepEqual(s.stats, {
      rxDropped: 21n,
      rxInvalid: 22n,
      rxFull: 23n,
      fillRingEmpty: 24n,
      txInvalid: 25n,
      txRingEmpty: 0x1_0000_001an,
    });
  });

  test("a socket without attributes; a short struct or attribute, or a type other than SOCK_RAW, is a DecodeError", () => {
    const s = decodeXdpDiagMsg(fixed, 0, fixed.length);
    assert.deepEqual([s.ifindex, s.uid, s.umem, s.stats], [0, undefined, undefined, undefined]);
    assert.throws(() => decodeXdpDiagMsg(fixed, 0, 15), DecodeError);
    for (const [type, payload] of [
      [1, Buffer.alloc(4)],
      [5, Buffer.alloc(36)],
      [8, Buffer.alloc(28)],
      [9, Buffer.alloc(40)],
    ] as const) {
      const b = Buffer.concat([fixed, nlattr(type, payload)]);
      assert.throws(() => decodeXdpDiagMsg(b, 0, b.length), DecodeError, `attribute ${type}`);
    }
    const dgram = pack(XDP_DIAG_MSG, { xdiag_family: 44, xdiag_type: 2 });
    assert.throws(() => decodeXdpDiagMsg(dgram, 0, 16), /unknown socket type 2/);
  });
});
