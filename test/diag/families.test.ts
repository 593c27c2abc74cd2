/**
 * packet_diag and netlink_diag: the dump requests against their structs, and the decoders on
 * messages built from the structs and attributes of linux/packet_diag.h and linux/netlink_diag.h.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { writeFamilyDumpRequest } from "../../src/diag/family-request.js";
import { decodeNetlinkDiagMsg } from "../../src/diag/netlink-diag.js";
import { decodePacketDiagMsg } from "../../src/diag/packet.js";
import { DecodeError, MessageWriter } from "../../src/netlink/index.js";
import {
  NETLINK_DIAG_MSG,
  nlattr,
  nlmsg,
  PACKET_DIAG_INFO,
  PACKET_DIAG_MSG,
  PACKET_DIAG_REQ,
  pack,
  SK_MEMINFO,
  u32,
} from "./layout.js";

const request = (protocol: Parameters<typeof writeFamilyDumpRequest>[2], states = 0) => {
  const w = new MessageWriter(Buffer.alloc(64, 0xaa));
  writeFamilyDumpRequest(w, 7, protocol, states);
  return w.buf.subarray(0, w.length);
};

describe("writeFamilyDumpRequest", () => {
  test("packet: struct packet_diag_req with ss's show bits (INFO|RING_CFG|FANOUT|MEMINFO|FILTER)", () => {
    const req = pack(PACKET_DIAG_REQ, { sdiag_family: 17, pdiag_show: 0x01 | 0x04 | 0x08 | 0x10 | 0x20 });
    assert.deepEqual(request("packet"), nlmsg({ type: 20, flags: 0x301, seq: 7 }, req));
  });

  test("netlink: every protocol (NDIAG_PROTO_ALL) with groups and memory", () => {
    const req = pack(PACKET_DIAG_REQ, { sdiag_family: 16, sdiag_protocol: 255, pdiag_show: 0x03 });
    assert.deepEqual(request("netlink"), nlmsg({ type: 20, flags: 0x301, seq: 7 }, req));
  });
});

const meminfo = (rmem: number, wmem: number) =>
  nlattr(
    6,
    pack(SK_MEMINFO, { SK_MEMINFO_RMEM_ALLOC: rmem, SK_MEMINFO_WMEM_ALLOC: wmem, SK_MEMINFO_DROPS: 9 }),
  );

describe("decodePacketDiagMsg", () => {
  test("the fixed fields, PACKET_DIAG_INFO, UID, MEMINFO, FANOUT and FILTER", () => {
    const fixed = pack(PACKET_DIAG_MSG, {
      pdiag_family: 17,
      pdiag_type: 2,
      pdiag_num: 0x0800,
      pdiag_ino: 4242,
      "pdiag_cookie[0]": 0x11223344,
      "pdiag_cookie[1]": 0x5,
    });
    const info = pack(PACKET_DIAG_INFO, {
      pdi_index: 3,
      pdi_version: 2,
      pdi_copy_thresh: 7,
      pdi_flags: 0x11,
    });
    const b = Buffer.concat([
      fixed,
      nlattr(0, info),
      nlattr(5, u32(1000)),
      meminfo(640, 0),
      nlattr(4, u32((1 << 16) | 42)),
      nlattr(7, Buffer.alloc(3 * 8)),
    ]);
    const s = decodePacketDiagMsg(b, 0, b.length);
    assert.deepEqual(
      [s.family, s.type, s.state, s.ethertype, s.inode, s.cookie, s.ifindex, s.uid, s.rqueue, s.wqueue],
      ["packet", "dgram", "close", 0x0800, 4242, 0x511223344n, 3, 1000, 640, 0],
    );
    assert.deepEqual(s.info, { version: 2, copyThresh: 7, tstamp: 0, flags: 0x11 });
    assert.deepEqual(s.fanout, { id: 42, type: 1 });
    assert.equal(s.filterLength, 3);
    assert.equal(s.skmem?.drops, 9);
  });

  test("a short message or an unknown type is a DecodeError", () => {
    const fixed = pack(PACKET_DIAG_MSG, { pdiag_family: 17, pdiag_type: 3 });
    assert.throws(() => decodePacketDiagMsg(fixed, 0, 15), DecodeError);
    const bad = pack(PACKET_DIAG_MSG, { pdiag_family: 17, pdiag_type: 1 });
    assert.throws(() => decodePacketDiagMsg(bad, 0, bad.length), /unknown socket type 1/);
    const info = Buffer.concat([fixed, nlattr(0, Buffer.alloc(20))]);
    assert.throws(() => decodePacketDiagMsg(info, 0, info.length), DecodeError);
  });
});

describe("decodeNetlinkDiagMsg", () => {
  test("port ids signed, as ss prints them; connected; groups; memory as the queues", () => {
    const fixed = pack(NETLINK_DIAG_MSG, {
      ndiag_family: 16,
      ndiag_type: 3,
      ndiag_protocol: 0,
      ndiag_state: 1,
      ndiag_portid: 0xf0000001,
      ndiag_dst_portid: 321,
      ndiag_dst_group: 0,
      ndiag_ino: 99,
      "ndiag_cookie[0]": 7,
    });
    const b = Buffer.concat([
      fixed,
      nlattr(0, pack(SK_MEMINFO, { SK_MEMINFO_RMEM_ALLOC: 5, SK_MEMINFO_WMEM_ALLOC: 6 })),
      nlattr(1, Buffer.from([1, 0, 0, 0, 0, 0, 0, 0x80])),
    ]);
    const s = decodeNetlinkDiagMsg(b, 0, b.length);
    assert.deepEqual(
      [s.family, s.type, s.netlinkProtocol, s.portid, s.connected, s.dstPortid, s.inode, s.cookie],
      ["netlink", "raw", 0, 0xf0000001 | 0, true, 321, 99, 7n],
    );
    assert.deepEqual([s.rqueue, s.wqueue, s.groups], [5, 6, [1, 0x80000000]]);
    const unconnected = pack(NETLINK_DIAG_MSG, { ndiag_family: 16, ndiag_type: 2, ndiag_portid: 12 });
    const u = decodeNetlinkDiagMsg(unconnected, 0, unconnected.length);
    assert.deepEqual([u.type, u.connected, u.portid, u.groups], ["dgram", false, 12, []]);
    assert.throws(() => decodeNetlinkDiagMsg(unconnected, 0, 27), DecodeError);
  });
});
