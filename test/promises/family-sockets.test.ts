/**
 * Packet and netlink sockets cross sockdiag/promises' thread boundary as the sync call lists them:
 * the same class and every field (a listing of this process's own namespace; a netlink socket is
 * always there, a packet socket is opened by the test kit's holder).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NetlinkSocket, PacketSocket, type Socket } from "../../src/diag/socket.js";
import { listSockets as listAsync } from "../../src/promises/index.js";
import { pack, unpack } from "../../src/promises/pack.js";
import { listSockets } from "../../src/sockets/index.js";

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
