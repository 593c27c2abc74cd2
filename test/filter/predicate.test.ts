import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { InetSocket } from "../../src/diag/socket.js";
import {
  builtinServices,
  compilePredicate,
  type FilterEnv,
  FilterResolveError,
  parseFilter,
} from "../../src/filter/index.js";
import { socketFromWords } from "../kit/socket-words.js";

const env: FilterEnv = {
  resolveDevice: (name) => ({ lo: 1, eth0: 2 })[name],
  resolveCgroup: (path) => (path === "/a" ? 42n : undefined),
  ephemeralPorts: [32768, 60999],
};
const matches = (filter: string, s: InetSocket) =>
  compilePredicate(parseFilter(filter, { services: builtinServices }), env)(s);

function v4(src: number, sport: number, dst = 0, dport = 0): InetSocket {
  return socketFromWords({
    family: "inet",
    protocol: "tcp",
    srcWords: [src],
    sport,
    dstWords: [dst],
    dport,
    cookie: 0n,
  });
}

function v6(
  src: [number, number, number, number],
  sport: number,
  dst: [number, number, number, number] = [0, 0, 0, 0],
  dport = 0,
) {
  return socketFromWords({
    family: "inet6",
    protocol: "tcp",
    srcWords: src,
    sport,
    dstWords: dst,
    dport,
    cookie: 0n,
  });
}

const IP_10_0_0_1 = 0x0a000001;
const mapped = (w: number): [number, number, number, number] => [0, 0, 0xffff, w];

describe("compilePredicate: addresses", () => {
  test("IPv4 prefixes match IPv4 sockets and v4-mapped IPv6 sockets", () => {
    assert.equal(matches("src 10.0.0.0/8", v4(IP_10_0_0_1, 1)), true);
    assert.equal(matches("src 10.0.0.0/8", v6(mapped(IP_10_0_0_1), 1)), true);
    assert.equal(matches("src 10.0.0.0/8", v4(0x0b000001, 1)), false);
    assert.equal(matches("src 10.0.0.1", v6(mapped(0x0a000002), 1)), false);
  });

  test("IPv4 prefixes do not match native IPv6 sockets, even when the first word agrees", () => {
    assert.equal(matches("src 10.0.0.0/8", v6([0x0a000000, 0, 0, 1], 1)), false);
    assert.equal(matches("src 0.0.0.0/0", v6([0x20010db8, 0, 0, 1], 1)), false);
    assert.equal(matches("src 0.0.0.0", v6([0, 0, 0, 0], 1)), false);
    assert.equal(matches("src 0.0.0.0/0", v6(mapped(1), 1)), true);
  });

  test("IPv6 prefixes match IPv6 sockets only", () => {
    assert.equal(matches("src [::/0]", v4(IP_10_0_0_1, 1)), false);
    assert.equal(matches("src [::/0]", v6([0, 0, 0, 1], 1)), true);
    assert.equal(matches("src [::ffff:10.0.0.1]", v6(mapped(IP_10_0_0_1), 1)), true);
    assert.equal(matches("src [::ffff:10.0.0.1]", v4(IP_10_0_0_1, 1)), false);
    assert.equal(matches("dst [2001:db8::/32]", v6([0, 0, 0, 0], 1, [0x20010db8, 5, 6, 7])), true);
    assert.equal(matches("dst [2001:db8::/33]", v6([0, 0, 0, 0], 1, [0x20010db8, 0x80000000, 0, 0])), false);
    assert.equal(matches("dst [2001:db8::1/127]", v6([0, 0, 0, 0], 1, [0x20010db8, 0, 0, 0])), true);
  });

  test("a negated condition matches exactly the sockets the condition does not", () => {
    const native6 = v6([0x20010db8, 0, 0, 1], 1);
    assert.equal(matches("not src 0.0.0.0/0", native6), true); // ss shows neither (its evaluators disagree)
    assert.equal(matches("not src 0.0.0.0/0", v4(1, 1)), false);
  });

  test("*, port-only and address:port", () => {
    assert.equal(matches("src *", v6([1, 2, 3, 4], 9)), true);
    assert.equal(matches("dst :53", v4(0, 1, 5, 53)), true);
    assert.equal(matches("dst :53", v6([0, 0, 0, 0], 1, [1, 2, 3, 4], 53)), true);
    assert.equal(matches("dst :53", v4(0, 53, 5, 54)), false);
    assert.equal(matches("dst 10.0.0.1:53", v4(0, 1, IP_10_0_0_1, 53)), true);
    assert.equal(matches("dst 10.0.0.1:53", v4(0, 1, IP_10_0_0_1, 54)), false);
    assert.equal(matches("src 10.0.0.1:*", v4(IP_10_0_0_1, 7)), true);
  });
});

describe("compilePredicate: ports, dev, fwmark, cgroup, autobound", () => {
  test("port comparisons", () => {
    const s = v4(0, 1024, 0, 80);
    const cases: Array<[string, boolean]> = [
      ["sport = :1024", true],
      ["sport :1024", true],
      ["sport != :1024", false],
      ["sport < :1024", false],
      ["sport <= :1024", true],
      ["sport > :1023", true],
      ["sport >= :1025", false],
      ["dport < :81", true],
      ["dport > :80", false],
    ];
    for (const [f, want] of cases) assert.equal(matches(f, s), want, f);
  });

  test("dev by name (resolved through the env) or index", () => {
    const s = v4(0, 1);
    s.ifindex = 2;
    assert.equal(matches("dev eth0", s), true);
    assert.equal(matches("dev 2", s), true);
    assert.equal(matches("dev lo", s), false);
    assert.throws(() => matches("dev nosuch", s), FilterResolveError);
  });

  test("fwmark: (mark & mask) == mark; an absent mark reads as 0, as in ss", () => {
    const s = v4(0, 1);
    s.mark = 0xff10;
    assert.equal(matches("fwmark 0x10/0xff", s), true);
    assert.equal(matches("fwmark 0xff10", s), true);
    assert.equal(matches("fwmark 0x10", s), false);
    assert.equal(matches("fwmark 0x1/0x0", s), false); // bits outside the mask never match
    s.mark = 0xffffffff;
    assert.equal(matches("fwmark 0xffffffff", s), true);
    const noMark = v4(0, 1);
    assert.equal(matches("fwmark 0", noMark), true);
    assert.equal(matches("fwmark 1", noMark), false);
  });

  test("cgroup by id; an absent id reads as 0", () => {
    const s = v4(0, 1);
    s.cgroupId = 42n;
    assert.equal(matches("cgroup /a", s), true);
    assert.equal(matches("cgroup /a", v4(0, 1)), false);
    assert.throws(() => matches("cgroup /nosuch", s), FilterResolveError);
  });

  test("autobound: the range is checked; under `not`, the kernel program decides", () => {
    assert.equal(matches("autobound", v4(0, 40000)), true);
    assert.equal(matches("autobound", v4(0, 32767)), false);
    assert.equal(matches("autobound", v4(0, 60999)), true);
    assert.equal(matches("not autobound", v4(0, 40000)), true);
    assert.equal(matches("not autobound", v4(0, 22)), true);
  });

  test("no filter matches everything; and/or/not combine", () => {
    assert.equal(compilePredicate(undefined)(v4(0, 0)), true);
    const s = v4(IP_10_0_0_1, 22);
    assert.equal(matches("src 10/8 and sport :22", s), true);
    assert.equal(matches("src 11/8 or sport :22", s), true);
    assert.equal(matches("not (src 11/8 or sport :23)", s), true);
    assert.equal(matches("src 11/8 or sport :23", s), false);
  });
});
