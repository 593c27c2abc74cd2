/**
 * Raw sockets from /proc/net/raw{,6}: the decoder against lines captured from this kernel, and the
 * rule of the fallback — a listing reads /proc only when the kernel answers a raw dump with ENOENT
 * (no raw_diag); a dump the kernel answers stays the answer, and a destroy never falls back.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeProcRaw } from "../../src/diag/proc-raw.js";
import type { InetSocket, Socket } from "../../src/diag/socket.js";
import { ALL_STATES } from "../../src/diag/states.js";
import { DecodeError } from "../../src/netlink/errors.js";
import { Dumper } from "../../src/sockets/dump.js";
import { UnsupportedProtocolError } from "../../src/sockets/errors.js";
import { planQuery } from "../../src/sockets/query.js";
import { Errno } from "../../src/sys/errors.js";
import { INET_DIAG_MSG, pack } from "../diag/layout.js";
import { doneAnswer, errorAnswer, FakeNetlink, partAnswer } from "../kit/index.js";

// Captured with `cat /proc/net/raw /proc/net/raw6` in a namespace holding three raw sockets.
const RAW = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  86: 0100007F:0011 0200007F:0000 01 00000000:00000000 00:00000000 00000000     0        0 7606477 2 000000002d2ee8b3 0
 115: 00000000:0001 00000000:0000 07 00000200:00000100 00:00000000 00000000  1000        0 7606475 2 000000001fda1871 0
`;
const RAW6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
   92: 00000000000000000000000000000000:003A 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 7606476 2 00000000acea11fc 0
   93: 000080FE00000000FF005452B8F6C2A4:00FD 00000000000000000000000001000000:0000 01 00000000:00000000 00:00000000 00000000     0        0 7606478 2 00000000acea11fd 0
`;

const fields = (s: InetSocket) => [
  s.family,
  s.state,
  s.src,
  s.sport,
  s.dst,
  s.dport,
  s.rqueue,
  s.wqueue,
  s.uid,
  s.inode,
];

describe("decodeProcRaw", () => {
  test("IPv4 lines: addresses in host byte order, the protocol as the port, queues, uid, inode", () => {
    const sockets = decodeProcRaw(RAW, "inet", ALL_STATES, undefined);
    assert.deepEqual(sockets.map(fields), [
      ["inet", "established", "127.0.0.1", 17, "127.0.0.2", 0, 0, 0, 0, 7606477],
      ["inet", "close", "0.0.0.0", 1, "0.0.0.0", 0, 0x100, 0x200, 1000, 7606475],
    ]);
    assert.ok(sockets.every((s) => s.protocol === "raw" && s.cookie === 0n && s.rawProtocol === s.sport));
  });

  test("IPv6 lines: four words each, link-local and loopback as inet_ntop prints them", () => {
    assert.deepEqual(decodeProcRaw(RAW6, "inet6", ALL_STATES, undefined).map(fields), [
      ["inet6", "close", "::", 58, "::", 0, 0, 0, 0, 7606476],
      ["inet6", "established", "fe80::5254:ff:a4c2:f6b8", 253, "::1", 0, 0, 0, 0, 7606478],
    ]);
  });

  test("only the states of the mask; a header alone or an empty file lists nothing", () => {
    const connected = decodeProcRaw(RAW, "inet", 1 << 1, undefined);
    assert.deepEqual(
      connected.map((s) => s.inode),
      [7606477],
    );
    assert.deepEqual(decodeProcRaw(RAW.split("\n")[0]!, "inet", ALL_STATES, undefined), []);
    assert.deepEqual(decodeProcRaw("", "inet", ALL_STATES, undefined), []);
  });

  test("a line that is not what the kernel prints is a DecodeError naming it", () => {
    const header = RAW.split("\n")[0];
    for (const [line, why] of [
      ["  1: 0100007F:0011 0200007F:0000 01", /fewer than 10 fields/],
      ["  1: 0100007F0011 0200007F:0000 01 0:0 00:0 0 0 0 1 2 0 0", /is not 8 hex digits and a port/],
      ["  1: 0100007F:0011 0200007F:0000 zz 0:0 00:0 0 0 0 1 2 0 0", /"zz" is not a hex number/],
      ["  1: 0100007F:0011 0200007F:0000 01 0:0 00:0 0 -1 0 1 2 0 0", /"-1" is not a number/],
    ] as const) {
      assert.throws(
        () => decodeProcRaw(`${header}\n${line}\n`, "inet", ALL_STATES, undefined),
        (err: unknown) =>
          err instanceof DecodeError && why.test(err.message) && err.message.includes("line 2"),
      );
    }
  });
});

describe("the /proc fallback of a raw dump", () => {
  const plan = planQuery({ protocols: ["raw"], families: ["inet"], states: ["established"] });
  const fromProc = decodeProcRaw(RAW, "inet", ALL_STATES, undefined);

  function run(answer: "ENOENT" | "socket", rawFromProc?: (family: number, states: number) => InetSocket[]) {
    const conn = new FakeNetlink({
      respond: (m) =>
        answer === "ENOENT"
          ? [errorAnswer(m, Errno.ENOENT)]
          : [
              partAnswer(m, 20, pack(INET_DIAG_MSG, { idiag_family: 2, idiag_state: 1, idiag_inode: 4242 })),
              doneAnswer(m),
            ],
    });
    const got: Socket[] = [];
    new Dumper(conn).each(plan, { attributes: false, rawFromProc }, (s) => got.push(s));
    return got;
  }

  test("no raw_diag (ENOENT): a listing's sockets come from /proc, in the dump's family and states", () => {
    const calls: [number, number][] = [];
    const got = run("ENOENT", (family, states) => {
      calls.push([family, states]);
      return fromProc;
    });
    assert.deepEqual(calls, [[2, 1 << 1]]);
    assert.deepEqual(
      got.map((s) => s.inode),
      fromProc.map((s) => s.inode),
    );
  });

  test("raw_diag answers: its sockets are the answer, /proc is never read", () => {
    let read = 0;
    const got = run("socket", () => {
      read++;
      return fromProc;
    });
    assert.equal(read, 0);
    assert.deepEqual(
      got.map((s) => s.inode),
      [4242],
    );
  });

  test("without the fallback (a destroy's dump) ENOENT stays UnsupportedProtocolError", () => {
    assert.throws(
      () => run("ENOENT"),
      (err: unknown) => err instanceof UnsupportedProtocolError && err.protocol === "raw",
    );
  });
});
