/**
 * Packet, netlink, vsock, tipc and xdp sockets cross sockdiag/promises' thread boundary as the sync
 * call lists them: the same class and every field (packet and netlink: a listing of this process's
 * own namespace, where a netlink socket always is; vsock, tipc and xdp, which this kernel cannot
 * list: decoded from answers built from their headers).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  NetlinkSocket,
  PacketSocket,
  type Socket,
  TipcSocket,
  VsockSocket,
  XdpSocket,
} from "../../src/diag/socket.js";
import { decodeTipcDiagMsg } from "../../src/diag/tipc.js";
import { decodeVsockDiagMsg } from "../../src/diag/vsock.js";
import { decodeXdpDiagMsg } from "../../src/diag/xdp.js";
import { listSockets as listAsync } from "../../src/promises/index.js";
import { pack, unpack } from "../../src/promises/pack.js";
import { listSockets } from "../../src/sockets/index.js";
import {
  nlattr,
  pack as packStruct,
  u32,
  VSOCK_DIAG_MSG,
  XDP_DIAG_MSG,
  XDP_DIAG_STATS,
} from "../diag/layout.js";

test("packet and netlink sockets come back from a chunk with their class and fields", () => {
  const sockets = listSockets({ protocols: ["netlink", "packet"], states: ["all"] });
  assert.ok(
    sockets.some((s) => s instanceof NetlinkSocket),
    "a netlink socket is listed",
  );
  // structuredClone: what postMessage does to a chunk between the threads.
  const back = unpack(structuredClone(pack(sockets))) as Socket[];
  assert.equal(back.length, sockets.length);
  back.forEach((s, i) => {
    assert.equal(Object.getPrototypeOf(s), Object.getPrototypeOf(sockets[i]));
    assert.deepStrictEqual({ ...s }, { ...sockets[i] });
  });
  assert.ok(back.every((s) => s instanceof NetlinkSocket || s instanceof PacketSocket));
});

test("sockdiag/promises lists netlink sockets as NetlinkSocket objects", async () => {
  const sockets = await listAsync({ protocols: ["netlink"], states: ["all"] });
  assert.ok(sockets.length > 0);
  assert.ok(sockets.every((s) => s instanceof NetlinkSocket));
});

test("vsock, tipc and xdp sockets come back from a chunk with their class and fields, nested ones too", () => {
  const vsock = packStruct(VSOCK_DIAG_MSG, {
    vdiag_family: 40,
    vdiag_type: 1,
    vdiag_state: 10,
    vdiag_src_port: 99,
    vdiag_ino: 5,
  });
  const tipc = nlattr(
    2,
    Buffer.concat([
      nlattr(6, u32(1)),
      nlattr(9, u32(1)),
      nlattr(3, Buffer.concat([nlattr(1, Buffer.alloc(0)), nlattr(2, u32(7)), nlattr(4, u32(8))])),
    ]),
  );
  const xdp = Buffer.concat([
    packStruct(XDP_DIAG_MSG, { xdiag_family: 44, xdiag_type: 3, xdiag_ino: 6 }),
    nlattr(9, packStruct(XDP_DIAG_STATS, { n_rx_dropped: 2n ** 60n })),
  ]);
  const netns = { label: "pod-b", dev: 4, ino: 4026531111 };
  const sockets: Socket[] = [
    decodeVsockDiagMsg(vsock, 0, vsock.length),
    decodeTipcDiagMsg(tipc, 0, tipc.length)!,
    decodeXdpDiagMsg(xdp, 0, xdp.length),
  ];
  for (const s of sockets) s.netns = netns;
  const back = unpack(structuredClone(pack(sockets))) as Socket[];
  assert.deepEqual(
    back.map((s) => Object.getPrototypeOf(s)),
    [VsockSocket.prototype, TipcSocket.prototype, XdpSocket.prototype],
  );
  back.forEach((s, i) => {
    assert.deepStrictEqual({ ...s }, { ...sockets[i] });
    assert.equal(JSON.stringify(s), JSON.stringify(sockets[i]));
  });
  assert.equal((back[2] as XdpSocket).stats?.rxDropped, 2n ** 60n);
  assert.deepEqual((back[1] as TipcSocket).connection?.service, { type: 8, instance: 0 });
});
