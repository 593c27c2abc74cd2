/**
 * vsock, tipc and xdp sockets in the table and in JSON, as ss prints them (misc/ss.c
 * vsock_stats_print, tipc_show_sock, xdp_show_sock with its -e details, sock_details_print,
 * print_skmeminfo). The sockets are decoded from answers built from the kernel headers' structs
 * (test/diag/layout.ts), as a listing decodes them; the expected text is written out from ss.c.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { renderTable, stringifyForOutput } from "../../src/cli/render/index.js";
import type { Display } from "../../src/cli/select/index.js";
import type { Socket } from "../../src/diag/socket.js";
import { decodeTipcDiagMsg } from "../../src/diag/tipc.js";
import { decodeVsockDiagMsg } from "../../src/diag/vsock.js";
import { decodeXdpDiagMsg } from "../../src/diag/xdp.js";
import { xdpAnswer } from "../diag/family-answers.js";
import { nlattr, pack, u32, u64, VSOCK_DIAG_MSG } from "../diag/layout.js";

const ANY = 0xffffffff;
const vsock = (values: Record<string, number>) => {
  const b = pack(VSOCK_DIAG_MSG, { vdiag_family: 40, ...values });
  return decodeVsockDiagMsg(b, 0, b.length);
};
const listener = vsock({
  vdiag_type: 1,
  vdiag_state: 10,
  vdiag_src_cid: ANY,
  vdiag_src_port: 1234,
  vdiag_dst_cid: ANY,
  vdiag_dst_port: ANY,
  vdiag_ino: 5,
});
const connected = vsock({
  vdiag_type: 1,
  vdiag_state: 1,
  vdiag_src_cid: 3,
  vdiag_src_port: 1024,
  vdiag_dst_cid: 2,
  vdiag_dst_port: 5000,
  vdiag_ino: 6,
});
const dgram = vsock({
  vdiag_type: 2,
  vdiag_state: 7,
  vdiag_src_cid: 3,
  vdiag_src_port: ANY,
  vdiag_dst_cid: ANY,
  vdiag_dst_port: ANY,
});

function tipcSocket(attrs: Buffer[]) {
  const b = nlattr(2, Buffer.concat(attrs));
  const s = decodeTipcDiagMsg(b, 0, b.length);
  assert.ok(s);
  return s;
}
const tipcStream = tipcSocket([
  nlattr(2, u32(42)),
  nlattr(1, u32(16781313)),
  nlattr(3, Buffer.concat([nlattr(2, u32(16781314)), nlattr(3, u32(2748))])),
  nlattr(6, u32(1)),
  nlattr(9, u32(1)),
  nlattr(7, u32(4321)),
  nlattr(8, u32(1000)),
  nlattr(10, u64(0x1122334455n)),
  nlattr(5, Buffer.concat([nlattr(0, u32(3)), nlattr(1, u32(4)), nlattr(4, u32(0))])),
]);
const tipcRdm = tipcSocket([
  nlattr(2, u32(8)),
  nlattr(1, u32(7)),
  nlattr(6, u32(4)),
  nlattr(9, u32(7)),
  nlattr(7, u32(99)),
  nlattr(8, u32(0)),
  nlattr(10, u64(0xan)),
]);

function xdpSocket(withDetails: boolean) {
  const b = xdpAnswer(withDetails);
  const s = decodeXdpDiagMsg(b, 0, b.length);
  s.interface = "eth5";
  return s;
}

const plain: Display = { options: false, extended: false, memory: false, info: false, processes: false };
const table = (sockets: Socket[], display: Partial<Display> = {}) =>
  renderTable(sockets, { display: { ...plain, ...display }, header: false, netnsColumn: false }).toString();

test("the Netid, State, queues, Local and Peer cells of vsock, tipc and xdp rows", () => {
  const rows = table([listener, connected, dgram, tipcStream, tipcRdm, xdpSocket(false)])
    .trimEnd()
    .split("\n")
    .map((r) => r.trim().split(/ +/));
  assert.deepEqual(rows, [
    ["v_str", "LISTEN", "0", "0", "*:1234", "*:*"],
    ["v_str", "ESTAB", "0", "0", "3:1024", "2:5000"],
    ["v_dgr", "UNCONN", "0", "0", "3:*", "*:*"],
    ["ti_st", "ESTAB", "3", "4", "16781313:42", "16781314:2748"],
    ["ti_rd", "UNCONN", "0", "0", "7:8", "-"],
    ["xdp", "UNCONN", "640", "0", "eth5:q2", "*"],
  ]);
});

test("-e: nothing for vsock; uid (not 0), ino and sk for tipc; xdp's rings, umem and stats a line each", () => {
  assert.equal(table([listener], { extended: true }), table([listener]));
  const tipc = table([tipcStream, tipcRdm], { extended: true }).split("\n");
  assert.match(tipc[0]!, / 16781314:2748 +uid:1000 ino:4321 sk:1122334455$/);
  assert.match(tipc[1]!, / - +ino:99 sk:a$/);
  // With -p, ss prints a tipc socket's owners after -e's details, a vsock or xdp socket's before.
  const owned = [tipcStream, xdpSocket(false), listener];
  const owners = new Map(owned.map((s) => [s.inode, [{ command: "app", pid: 7, fd: 3 }]]));
  const withOwners = renderTable(owned, {
    display: { ...plain, extended: true, processes: true },
    header: false,
    netnsColumn: false,
    owners,
  })
    .toString()
    .split("\n");
  assert.match(withOwners[0]!, / uid:1000 ino:4321 sk:1122334455 users:\(\("app",pid=7,fd=3\)\)$/);
  assert.match(withOwners[1]!, / users:\(\("app",pid=7,fd=3\)\)( uid:\d+)? ino:\d+ sk:[0-9a-f]+$/);
  assert.match(withOwners[2]!, / users:\(\("app",pid=7,fd=3\)\)$/);
  const xdp = table([xdpSocket(true)], { extended: true }).split("\n");
  assert.match(xdp[0]!, /eth5:q2 \* +uid:1001 ino:991 sk:200000010$/);
  assert.deepEqual(xdp.slice(1), [
    "\trx(entries:2048)",
    "\ttx(entries:1024)",
    "\tumem(id:11,size:4294967296,num_pages:12,chunk_size:13,headroom:14,ifindex:15,qid:16,zc:1,refs:17)",
    "\tfr(entries:512)",
    "\tcr(entries:256)",
    "\tstats(rx dropped:21,rx invalid:22,rx queue full:23,rx fill ring empty:24,tx invalid:25,tx ring empty:4294967322)",
    "",
  ]);
});

test("-e -O puts xdp's details on its line (ss's own \"tumem(\" spelling); -m adds skmem to the last line", () => {
  const one = table([xdpSocket(true)], { extended: true, oneline: true });
  assert.equal(one.split("\n").length, 2);
  assert.match(
    one,
    / sk:200000010 rx\(entries:2048\) tx\(entries:1024\) tumem\(id:11,.*refs:17\) fr\(entries:512\) cr\(entries:256\) stats\(rx dropped:21,.*tx ring empty:4294967322\)\n$/,
  );
  const memory = table([xdpSocket(true)], { extended: true, memory: true }).split("\n");
  assert.match(memory.at(-2)!, /^\tstats\(.*\) skmem:\(r640,rb650,t0,tb0,f0,w0,o0,bl0,d1\)$/);
  assert.match(
    table([xdpSocket(false)], { memory: true }),
    /eth5:q2 \* +skmem:\(r640,rb650,t0,tb0,f0,w0,o0,bl0,d1\)\n$/,
  );
  assert.equal(table([tipcStream], { memory: true }), table([tipcStream]));
});

test("--tipcinfo: ss's line of TIPC type, congestion, drops, publication and service (-O: on the row)", () => {
  const connectedByName = tipcSocket([
    nlattr(2, u32(1)),
    nlattr(1, u32(2)),
    nlattr(
      3,
      Buffer.concat([
        nlattr(2, u32(3)),
        nlattr(3, u32(4)),
        nlattr(1, Buffer.alloc(0)),
        nlattr(4, u32(18888)),
        nlattr(5, u32(17)),
      ]),
    ),
    nlattr(6, u32(5)),
    nlattr(9, u32(1)),
    nlattr(5, Buffer.concat([nlattr(4, u32(6)), nlattr(2, Buffer.alloc(0))])),
  ]);
  const published = tipcSocket([nlattr(4, Buffer.alloc(0)), nlattr(6, u32(2)), nlattr(9, u32(7))]);
  const lines = table([connectedByName, published, tipcStream], { tipcinfo: true }).split("\n");
  assert.deepEqual(lines[0]!.trim().split(/ +/), ["ti_sq", "ESTAB", "0", "0", "2:1", "3:4"]);
  assert.deepEqual(
    [lines[1], lines[3], lines[5]],
    [
      " type:SEQPACKET cong:link  drop:6  via {18888,17}",
      " type:DGRAM cong:none  drop:0  publ",
      " type:STREAM cong:none  drop:0",
    ],
  );
  assert.match(
    table([published], { tipcinfo: true, oneline: true }),
    /^ti_dg +UNCONN +0 +0 +0:0 +- +type:DGRAM cong:none {2}drop:0 {2}publ\n$/,
  );
  assert.equal(table([xdpSocket(false), listener], { tipcinfo: true }), table([xdpSocket(false), listener]));
});

test("JSON: each family's fields, following the packet and netlink sockets' (64-bit values as strings)", () => {
  const json = (s: Socket) => JSON.parse(stringifyForOutput(s)) as Record<string, unknown>;
  assert.deepEqual(json(connected), {
    netns: "(host)",
    family: "vsock",
    protocol: "vsock",
    type: "stream",
    state: "established",
    srcCid: 3,
    srcPort: 1024,
    dstCid: 2,
    dstPort: 5000,
    shutdown: 0,
    cookie: "0",
    inode: 6,
    rqueue: 0,
    wqueue: 0,
  });
  assert.deepEqual(json(tipcStream), {
    netns: "(host)",
    family: "tipc",
    protocol: "tipc",
    type: "stream",
    state: "established",
    node: 16781313,
    ref: 42,
    connection: { node: 16781314, port: 2748 },
    published: false,
    cookie: String(0x1122334455n),
    inode: 4321,
    uid: 1000,
    rqueue: 3,
    wqueue: 4,
    drops: 0,
    linkCongested: false,
    connCongested: false,
  });
  const xdp = json(xdpSocket(true));
  assert.deepEqual(Object.keys(xdp), [
    "netns",
    "family",
    "protocol",
    "type",
    "state",
    "ifindex",
    "interface",
    "queueId",
    "cookie",
    "inode",
    "uid",
    "rqueue",
    "wqueue",
    "rxRing",
    "txRing",
    "umem",
    "fillRing",
    "completionRing",
    "skmem",
    "stats",
  ]);
  assert.deepEqual(
    [xdp.interface, xdp.queueId, xdp.cookie, xdp.rqueue],
    ["eth5", 2, String(0x200000010n), 640],
  );
  assert.deepEqual((xdp.umem as Record<string, unknown>).size, "4294967296");
  assert.deepEqual((xdp.stats as Record<string, unknown>).txRingEmpty, "4294967322");
});
