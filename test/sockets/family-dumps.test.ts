/**
 * vsock, tipc and xdp dumps through the Dumper, against a fake connection (this machine's kernel
 * has none of their handlers) answering with messages built from the headers' structs: each
 * family's sockets come out decoded with their namespace and interface name, the types asked for
 * are kept, tipc's empty messages are skipped, and a dump after them still runs on the same
 * connection. A kernel without the handler (ENOENT) is still an UnsupportedProtocolError.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Socket, SocketNetns, TipcSocket, VsockSocket, XdpSocket } from "../../src/diag/socket.js";
import { Dumper } from "../../src/sockets/dump.js";
import { UnsupportedProtocolError } from "../../src/sockets/errors.js";
import { planQuery, type SocketQuery } from "../../src/sockets/query.js";
import {
  NETLINK_DIAG_MSG,
  nlattr,
  pack,
  u32,
  VSOCK_DIAG_MSG,
  XDP_DIAG_INFO,
  XDP_DIAG_MSG,
} from "../diag/layout.js";
import { doneAnswer, errorAnswer, FakeNetlink, partAnswer, type SentMessage } from "../kit/index.js";

const AF = { netlink: 16, tipc: 30, vsock: 40, xdp: 44 } as const;
const SOCK_DIAG_BY_FAMILY = 20;
const ENOENT = 2;

const vsock = (type: number, ino: number) =>
  pack(VSOCK_DIAG_MSG, {
    vdiag_family: 40,
    vdiag_type: type,
    vdiag_state: 1,
    vdiag_src_cid: 3,
    vdiag_ino: ino,
  });
const xdp = (ino: number, ifindex: number) =>
  Buffer.concat([
    pack(XDP_DIAG_MSG, { xdiag_family: 44, xdiag_type: 3, xdiag_ino: ino }),
    nlattr(1, pack(XDP_DIAG_INFO, { ifindex, queue_id: 2 })),
  ]);
const tipc = (ino: number) =>
  nlattr(2, Buffer.concat([nlattr(6, u32(4)), nlattr(9, u32(7)), nlattr(7, u32(ino))]));

/** A kernel with every handler but those in `missing`; each dump answers a few sockets. */
function kernel(missing: readonly number[] = []): FakeNetlink {
  return new FakeNetlink({
    interfaceNames: { 5: "eth5" },
    respond: (m: SentMessage) => {
      const family = m.payload[0]!;
      if (missing.includes(family)) return [errorAnswer(m, ENOENT)];
      const part = (payload: Buffer) => partAnswer(m, SOCK_DIAG_BY_FAMILY, payload);
      if (family === AF.vsock)
        return [part(vsock(1, 11)), part(vsock(2, 12)), part(vsock(1, 13)), doneAnswer(m)];
      // The middle socket is in a state the request left out: an empty message.
      if (family === AF.tipc) return [part(tipc(21)), part(Buffer.alloc(0)), part(tipc(23)), doneAnswer(m)];
      if (family === AF.xdp) return [part(xdp(31, 5)), part(xdp(32, 5)), part(xdp(33, 9)), doneAnswer(m)];
      if (family === AF.netlink)
        return [
          part(pack(NETLINK_DIAG_MSG, { ndiag_family: 16, ndiag_type: 3, ndiag_ino: 77 })),
          doneAnswer(m),
        ];
      return [doneAnswer(m)];
    },
  });
}

const NETNS: SocketNetns = { label: "pod-a", dev: 4, ino: 4026532999 };

function dump(query: SocketQuery, conn = kernel()): { sockets: Socket[]; unsupported: string[] } {
  const plan = planQuery(query);
  const sockets: Socket[] = [];
  new Dumper(conn).each(plan, { attributes: false, netns: NETNS }, (s) => sockets.push(s));
  return { sockets, unsupported: [...plan.unsupported] };
}

test("vsock, tipc and xdp sockets are decoded, in order, each with the dump's namespace", () => {
  const { sockets } = dump({ protocols: ["vsock", "tipc", "xdp", "netlink"], states: ["all"] });
  assert.deepEqual(
    sockets.map((s) => [s.family, s.inode, s.netns?.label]),
    [
      ["vsock", 11, "pod-a"],
      ["vsock", 12, "pod-a"],
      ["vsock", 13, "pod-a"],
      ["tipc", 21, "pod-a"],
      ["tipc", 23, "pod-a"],
      ["xdp", 31, "pod-a"],
      ["xdp", 32, "pod-a"],
      ["xdp", 33, "pod-a"],
      ["netlink", 77, "pod-a"],
    ],
  );
  assert.deepEqual(
    sockets.filter((s) => s.family === "vsock").map((s) => (s as VsockSocket).type),
    ["stream", "dgram", "stream"],
  );
  assert.deepEqual(
    sockets.filter((s) => s.family === "tipc").map((s) => [(s as TipcSocket).type, s.state]),
    [
      ["rdm", "close"],
      ["rdm", "close"],
    ],
  );
});

test("an XDP socket's interface is named in the dump's namespace, asked once per interface", () => {
  const conn = kernel();
  const { sockets } = dump({ protocols: ["xdp"], states: ["close"] }, conn);
  assert.deepEqual(
    sockets.map((s) => [(s as XdpSocket).ifindex, (s as XdpSocket).interface, (s as XdpSocket).queueId]),
    [
      [5, "eth5", 2],
      [5, "eth5", 2],
      [9, "if9", 2],
    ],
  );
  assert.deepEqual(conn.namesAsked, [5, 9]);
});

test("vsockTypes keeps the types asked for; the request carries the states, filtered by the kernel", () => {
  const conn = kernel();
  const { sockets } = dump(
    { protocols: ["vsock"], states: ["established", "listening"], vsockTypes: ["dgram"] },
    conn,
  );
  assert.deepEqual(
    sockets.map((s) => s.inode),
    [12],
  );
  assert.equal(conn.sent[0]!.payload.readUInt32LE(4), (1 << 1) | (1 << 10));
  assert.throws(() => planQuery({ protocols: ["vsock"], vsockTypes: ["raw" as never] }), /vsockTypes/);
});

test("xdp sockets are all unconnected: a query for other states sends no xdp dump", () => {
  const conn = kernel();
  const { sockets } = dump({ protocols: ["xdp", "vsock"], states: ["established"] }, conn);
  assert.deepEqual(
    conn.sent.map((m) => m.payload[0]),
    [AF.vsock],
  );
  assert.ok(sockets.every((s) => s.family === "vsock"));
});

test("a kernel without the handler: skipped under ignoreUnsupported, else UnsupportedProtocolError", () => {
  const missing = [AF.vsock, AF.tipc, AF.xdp];
  const { sockets, unsupported } = dump(
    { protocols: ["vsock", "tipc", "xdp", "netlink"], states: ["all"], ignoreUnsupported: true },
    kernel(missing),
  );
  assert.deepEqual(unsupported, ["vsock", "tipc", "xdp"]);
  assert.deepEqual(
    sockets.map((s) => s.family),
    ["netlink"],
  );
  assert.throws(
    () => dump({ protocols: ["tipc"], states: ["all"] }, kernel(missing)),
    (err: unknown) =>
      err instanceof UnsupportedProtocolError &&
      err.protocol === "tipc" &&
      /protocol tipc is not supported by this kernel \(no tipc_diag sock_diag handler\)/.test(err.message),
  );
});
