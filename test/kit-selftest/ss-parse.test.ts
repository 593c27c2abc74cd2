import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { columnDefaults } from "../kit/ss.js";
import { parseSs, parseSsLine, SsParseError } from "../kit/ss-parse.js";

// Lines captured from iproute2 6.1 `ss -H -n -e` on kernel 6.18 (column padding kept).
const ALL = `\
nl    UNCONN 0      0                       0:0                       *      sk=0 cb=0 groups=0x00000000
u_dgr ESTAB  0      0                       * 5974                   * 5973  <->
u_dgr ESTAB  0      0       /tmp/sdt-exp.sock 5977                   * 0     <-> ino:2146681 dev:0/65024
u_str LISTEN 0      128                  @abs 5970                   * 0     <-> peers:
u_str LISTEN 0      128            @has space 60001                  * 0     <-> peers:
udp   ESTAB  0      0               127.0.0.1:54189          127.0.0.1:9999  ino:5957 sk:16 cgroup:unreachable:1 <->
udp   UNCONN 0      0                 0.0.0.0:5353             0.0.0.0:*     ino:5956 sk:17 cgroup:unreachable:1 <->
udp   UNCONN 0      0                       *:5354                   *:*     ino:5959 sk:18 cgroup:unreachable:1 v6only:0 <->
udp   UNCONN 0      0                    [::]:7000                [::]:*     ino:6071 sk:25 cgroup:unreachable:1 v6only:1 <->
udp   ESTAB  0      0      [::ffff:127.0.0.1]:45739 [::ffff:127.0.0.1]:9999  ino:5958 sk:1a cgroup:unreachable:1 <->
tcp   ESTAB  0      0            127.0.0.1%lo:57920          127.0.0.1:8080  ino:59999 sk:a00b cgroup:unreachable:1 <->
tcp   TIME-WAIT 0   0               127.0.0.1:34548          127.0.0.1:52199 timer:(timewait,59sec,0) ino:0 sk:1038
mptcp LISTEN 0      128             127.0.0.1:8081             0.0.0.0:*     ino:5965 sk:21 cgroup:unreachable:1 <->
`;

describe("parseSs", () => {
  const rows = parseSs(ALL);

  test("reads every line", () => {
    assert.equal(rows.length, 13);
  });

  test("netlink rows keep ss's columns as text", () => {
    assert.deepEqual(
      { netid: rows[0]?.netid, family: rows[0]?.family, src: rows[0]?.src, dst: rows[0]?.dst },
      { netid: "nl", family: "other", src: "0:0", dst: "*" },
    );
  });

  test("unix rows: name, inode, peer inode; ino: of a bound path is not the socket inode", () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((i) => {
        const r = rows[i];
        return [r?.netid, r?.state, r?.src, r?.inode, r?.dst, r?.peer, r?.cookie];
      }),
      [
        ["u_dgr", "established", "*", 5974, "*", 5973, undefined],
        ["u_dgr", "established", "/tmp/sdt-exp.sock", 5977, "*", 0, undefined],
        ["u_str", "listening", "@abs", 5970, "*", 0, undefined],
        ["u_str", "listening", "@has space", 60001, "*", 0, undefined],
      ],
    );
  });

  test("inet rows: addresses, ports, inode and hex cookie", () => {
    const r = rows[5];
    assert.deepEqual(
      [r?.family, r?.state, r?.src, r?.sport, r?.dst, r?.dport, r?.inode, r?.cookie],
      ["inet", "established", "127.0.0.1", 54189, "127.0.0.1", 9999, 5957, "22"],
    );
    assert.equal(rows[12]?.cookie, "33");
    assert.equal(rows[10]?.cookie, String(0xa00b));
  });

  test("wildcards: 0.0.0.0:*, *:PORT (dual-stack IPv6) and [::]:*", () => {
    assert.deepEqual(
      [rows[6]?.family, rows[6]?.dst, rows[6]?.dport, rows[6]?.state],
      ["inet", "0.0.0.0", 0, "close"],
    );
    assert.deepEqual(
      [rows[7]?.family, rows[7]?.src, rows[7]?.sport, rows[7]?.dst],
      ["inet6", "::", 5354, "::"],
    );
    assert.deepEqual([rows[8]?.family, rows[8]?.src, rows[8]?.dst], ["inet6", "::", "::"]);
  });

  test("v4-mapped IPv6 and a bound device", () => {
    assert.deepEqual(
      [rows[9]?.family, rows[9]?.src, rows[9]?.dst],
      ["inet6", "::ffff:127.0.0.1", "::ffff:127.0.0.1"],
    );
    assert.deepEqual([rows[10]?.src, rows[10]?.device, rows[10]?.sport], ["127.0.0.1", "lo", 57920]);
  });

  test("states with dashes, and extras kept", () => {
    assert.equal(rows[11]?.state, "time-wait");
    assert.ok(rows[11]?.extra.includes("timer:(timewait,59sec,0)"));
  });

  test("continuation lines join the socket line before them", () => {
    const joined = parseSs("tcp ESTAB 0 0 1.2.3.4:1 5.6.7.8:2 ino:7 sk:1\n\t cubic wscale:7,7\n");
    assert.equal(joined.length, 1);
    assert.deepEqual(joined[0]?.extra.slice(-2), ["cubic", "wscale:7,7"]);
  });
});

describe("missing columns", () => {
  const line = "0      0         127.0.0.1:8080  127.0.0.1:57920 ino:60000 sk:a00c cgroup:unreachable:1 <->";

  test("Netid and State come from the defaults when ss leaves them out", () => {
    const r = parseSsLine(line, { netid: "tcp", state: "established" });
    assert.deepEqual([r.netid, r.state, r.sport, r.inode], ["tcp", "established", 8080, 60000]);
  });

  test("a UDP row's state follows from whether it is connected", () => {
    const udp = (remote: string) =>
      parseSsLine(`0 0 127.0.0.1:5000 ${remote} ino:1 sk:1`, { netid: "udp" }).state;
    assert.equal(udp("127.0.0.1:53"), "established");
    assert.equal(udp("0.0.0.0:*"), "close");
  });

  test("without defaults the parser says which column is missing", () => {
    assert.throws(
      () => parseSsLine(line),
      (e: Error) => e instanceof SsParseError && /Netid/.test(e.message),
    );
    assert.throws(() => parseSsLine(line, { netid: "tcp" }), /State/);
  });

  test("columnDefaults infers from a single protocol flag and a single state word", () => {
    assert.deepEqual(columnDefaults(["-t", "state", "established"]), { netid: "tcp", state: "established" });
    assert.deepEqual(columnDefaults(["-ua", "state", "unconnected"]), { netid: "udp", state: "close" });
    assert.deepEqual(columnDefaults(["-tu", "state", "connected"]), {});
    assert.deepEqual(columnDefaults(["--mptcp"]), { netid: "mptcp" });
  });

  test("garbage is an SsParseError quoting the line", () => {
    assert.throws(
      () => parseSsLine("State Recv-Q"),
      (e: Error) => e instanceof SsParseError && e.message.includes("Recv-Q"),
    );
    assert.throws(() => parseSsLine("tcp ESTAB 0 0 nonsense 1.2.3.4:5"), /no port/);
  });
});
