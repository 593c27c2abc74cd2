/**
 * Messages captured from the real kernel (test/fixtures/*.hex, see capture.ts), decoded and checked
 * field by field: against values written out here, and against the facts the capture observed
 * without sock_diag (getsockname, fstat inode, SO_COOKIE, getuid).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeInetDiagMsg } from "../../src/diag/inet.js";
import { decodeUnixDiagMsg } from "../../src/diag/unix.js";
import { loadFixture } from "../fixtures/fixtures.js";
import { TCP_INFO, unpack } from "./layout.js";

const udp = loadFixture("inet-udp4.hex");
const tcp = loadFixture("inet-tcp4.hex");
const unix = loadFixture("unix-stream-listener.hex");

describe("captured inet_diag_msg: connected UDP over IPv4 (inet-udp4.hex)", () => {
  const s = decodeInetDiagMsg(udp.bytes, 0, udp.bytes.length, { protocol: "udp", attributes: true });

  test("struct inet_diag_msg, field by field", () => {
    assert.equal(s.family, "inet");
    assert.equal(s.protocol, "udp");
    assert.equal(s.stateCode, 1);
    assert.equal(s.state, "established");
    assert.equal(s.timer, 0);
    assert.equal(s.retrans, 0);
    assert.equal(s.src, "127.0.0.1");
    assert.equal(s.sport, 46844);
    assert.equal(s.dst, "127.0.0.1");
    assert.equal(s.dport, 49570);
    assert.deepEqual([s.srcWords[0], s.srcWords[1], s.srcWords[2], s.srcWords[3]], [0x7f000001, 0, 0, 0]);
    assert.deepEqual([s.dstWords[0], s.dstWords[1], s.dstWords[2], s.dstWords[3]], [0x7f000001, 0, 0, 0]);
    assert.equal(s.ifindex, 0);
    assert.equal(s.cookie, 342815n);
    assert.equal(s.expires, 0);
    assert.equal(s.rqueue, 0);
    assert.equal(s.wqueue, 0);
    assert.equal(s.uid, 0);
    assert.equal(s.inode, 565392);
  });

  test("attributes: SHUTDOWN, TOS, MARK, CGROUP_ID, MEMINFO, SKMEMINFO; SOCKOPT skipped", () => {
    assert.equal(s.shutdown, 2, "shutdown(SHUT_WR) sets SEND_SHUTDOWN");
    assert.equal(s.tos, 0x10, "IP_TOS 0x10");
    assert.equal(s.mark, 0);
    assert.equal(s.cgroupId, 1n, "the cgroup v2 root");
    assert.deepEqual(s.meminfo, { rmem: 0, wmem: 0, fmem: 0, tmem: 0 });
    assert.deepEqual(s.skmem, {
      rmemAlloc: 0,
      rcvbuf: 212992,
      wmemAlloc: 0,
      sndbuf: 212992,
      fwdAlloc: 0,
      wmemQueued: 0,
      optmem: 0,
      backlog: 0,
      drops: 0,
    });
    assert.equal(s.tcpinfo, undefined);
    assert.equal(s.cong, undefined);
    assert.equal(s.v6only, undefined);
  });

  test("agrees with what the capture observed without sock_diag", () => {
    assert.equal(`${s.src}:${s.sport}`, udp.facts.local);
    assert.equal(`${s.dst}:${s.dport}`, udp.facts.remote);
    assert.equal(String(s.inode), udp.facts.inode);
    assert.equal(String(s.cookie), udp.facts.cookie);
    assert.equal(String(s.uid), udp.facts.uid);
  });
});

describe("captured inet_diag_msg: established TCP client over IPv4 (inet-tcp4.hex)", () => {
  const s = decodeInetDiagMsg(tcp.bytes, 0, tcp.bytes.length, { protocol: "tcp", attributes: true });

  test("struct inet_diag_msg, field by field", () => {
    assert.equal(s.family, "inet");
    assert.equal(s.state, "established");
    assert.equal(s.timer, 0);
    assert.equal(s.retrans, 0);
    assert.equal(`${s.src}:${s.sport}`, "127.0.0.1:46624");
    assert.equal(`${s.dst}:${s.dport}`, "127.0.0.1:44703");
    assert.equal(s.ifindex, 0);
    assert.equal(s.cookie, 342817n);
    assert.equal(s.inode, 565394);
    assert.equal(s.uid, 0);
    assert.deepEqual([s.expires, s.rqueue, s.wqueue], [0, 0, 0]);
  });

  test("agrees with what the capture observed without sock_diag", () => {
    assert.equal(`${s.src}:${s.sport}`, tcp.facts.local);
    assert.equal(`${s.dst}:${s.dport}`, tcp.facts.remote);
    assert.equal(String(s.inode), tcp.facts.inode);
    assert.equal(String(s.cookie), tcp.facts.cookie);
  });

  test("INFO: this kernel's 280-byte struct tcp_info, decoded as far as linux/tcp.h describes it", () => {
    const info = s.tcpinfo;
    assert.ok(info);
    // The attribute: nla_len 284 (0x011c), type INET_DIAG_INFO (2), at byte 72 + 8 + 8 + 12 + 8 of the message.
    const at = 72 + 8 + 8 + 12 + 8;
    assert.deepEqual([tcp.bytes.readUInt16LE(at), tcp.bytes.readUInt16LE(at + 2)], [284, 2]);
    const raw = unpack(TCP_INFO, tcp.bytes, at + 4);
    assert.equal(info.state, 1);
    assert.equal(info.caState, 0);
    assert.equal(info.options, 7, "TCPI_OPT_TIMESTAMPS|SACK|WSCALE");
    assert.deepEqual([info.sndWscale, info.rcvWscale], [10, 10]);
    assert.equal(info.deliveryRateAppLimited, 1);
    assert.equal(info.rto, 200000, "TCP_TIMEOUT_INIT, in microseconds");
    assert.equal(info.sndMss, 32741);
    assert.equal(info.rcvMss, 536);
    assert.equal(info.sndCwnd, 10);
    assert.equal(info.pmtu, 65535);
    // Every remaining field equals the header-layout reading of the same bytes.
    for (const x of TCP_INFO.fields) {
      if (x.offset < 8) continue;
      const name = x.name.replace(/^tcpi_/, "").replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
      assert.equal((info as Record<string, unknown>)[name], raw[x.name], x.name);
    }
  });

  test("CONG, SHUTDOWN, MARK, CGROUP_ID", () => {
    assert.equal(s.cong, "bbr");
    assert.equal(s.shutdown, 0);
    assert.equal(s.mark, 0);
    assert.equal(s.cgroupId, 1n);
  });
});

describe("captured unix_diag_msg: listening stream socket with a pending connection (unix-stream-listener.hex)", () => {
  const s = decodeUnixDiagMsg(unix.bytes, 0, unix.bytes.length);

  test("struct unix_diag_msg, field by field", () => {
    assert.equal(s.family, "unix");
    assert.equal(s.type, "stream");
    assert.equal(s.state, "listening");
    assert.equal(s.inode, 565396);
    assert.equal(s.cookie, 342820n);
  });

  test("attributes: NAME, ICONS, RQLEN, MEMINFO, SHUTDOWN, UID; no PEER or VFS for an abstract listener", () => {
    assert.equal(s.name, "@sockdiag-fixture");
    assert.deepEqual(s.icons, [565397]);
    assert.equal(s.rqueue, 1, "one connection waiting to be accepted");
    assert.equal(s.wqueue, 5, "the listen() backlog");
    assert.equal(s.skmem?.rcvbuf, 212992);
    assert.equal(s.skmem?.sndbuf, 212992);
    assert.equal(s.skmem?.drops, 0);
    assert.equal(s.shutdown, 0);
    assert.equal(s.uid, 0);
    assert.equal(s.peer, undefined);
    assert.equal(s.vfs, undefined);
  });

  test("agrees with what the capture observed without sock_diag", () => {
    assert.equal(s.name, unix.facts.local);
    assert.equal(String(s.inode), unix.facts.inode);
    assert.equal(String(s.cookie), unix.facts.cookie);
    assert.equal(String(s.uid), unix.facts.uid);
    assert.equal(String(s.icons?.[0]), unix.facts["pending client inode"]);
  });
});
