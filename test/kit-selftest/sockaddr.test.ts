import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  canonicalAddress,
  decodeSockaddr,
  familyOf,
  parseIPv6,
  SockaddrError,
  sockaddrIn,
  sockaddrIn6,
  sockaddrUn,
  unixDisplayName,
} from "../kit/sockaddr.js";

// Expected bytes are written out by hand from the C layouts (little-endian host: sa_family_t first).
const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");

describe("sockaddr encoders", () => {
  test("sockaddr_in: family, big-endian port, address, 8 zero bytes", () => {
    assert.deepEqual(sockaddrIn("127.0.0.1", 53), hex("0200 0035 7f000001 0000000000000000"));
  });

  test("sockaddr_in6: family, port, flowinfo, address, scope id", () => {
    assert.deepEqual(
      sockaddrIn6("2001:db8::1", 8080),
      hex("0a00 1f90 00000000 20010db8000000000000000000000001 00000000"),
    );
  });

  test("sockaddr_in6 takes IPv4 text as its v4-mapped form", () => {
    assert.deepEqual(sockaddrIn6("10.1.2.3", 1), sockaddrIn6("::ffff:10.1.2.3", 1));
    assert.deepEqual(sockaddrIn6("10.1.2.3", 1).subarray(8, 24), hex("00000000000000000000ffff0a010203"));
  });

  test("sockaddr_un: a path is NUL-terminated, an abstract name has its exact length", () => {
    assert.deepEqual(sockaddrUn("/tmp/a"), Buffer.concat([hex("0100"), Buffer.from("/tmp/a\0")]));
    assert.deepEqual(sockaddrUn("\0ab"), hex("0100 00 6162"));
  });

  test("bad input is a SockaddrError naming it", () => {
    assert.throws(
      () => sockaddrIn("::1", 1),
      (e: Error) => e instanceof SockaddrError && e.message.includes("::1"),
    );
    assert.throws(() => sockaddrIn("1.2.3.4", 70000), SockaddrError);
    assert.throws(() => sockaddrIn6("fe80::1%lo", 1), /zones/);
    assert.throws(() => sockaddrUn(`/${"x".repeat(107)}`), SockaddrError);
    assert.throws(() => sockaddrUn(""), SockaddrError);
  });
});

describe("address text", () => {
  test("parseIPv6 handles ::, leading/trailing compression and a dotted tail", () => {
    assert.deepEqual(parseIPv6("::"), Buffer.alloc(16));
    assert.deepEqual(parseIPv6("::1"), hex("00000000000000000000000000000001"));
    assert.deepEqual(parseIPv6("fe80::"), hex("fe800000000000000000000000000000"));
    assert.deepEqual(parseIPv6("1:2:3:4:5:6:7:8"), hex("00010002000300040005000600070008"));
    assert.deepEqual(parseIPv6("::ffff:192.168.0.1"), hex("00000000000000000000ffffc0a80001"));
  });

  test("canonicalAddress prints as the kernel's peers do", () => {
    assert.equal(canonicalAddress("2001:0db8:0:0:0:0:0:0001"), "2001:db8::1");
    assert.equal(canonicalAddress("0:0:0:0:0:ffff:7f00:1"), "::ffff:127.0.0.1");
    assert.equal(canonicalAddress("10.0.0.1"), "10.0.0.1");
  });

  test("familyOf", () => {
    assert.equal(familyOf("1.2.3.4"), "inet");
    assert.equal(familyOf("::"), "inet6");
    assert.throws(() => familyOf("localhost"), SockaddrError);
  });

  test("unixDisplayName uses ss notation", () => {
    assert.equal(unixDisplayName("\0x"), "@x");
    assert.equal(unixDisplayName("/run/x"), "/run/x");
    assert.equal(unixDisplayName(undefined), "*");
  });
});

describe("decodeSockaddr", () => {
  test("round-trips what the encoders produce", () => {
    const v4 = sockaddrIn("192.0.2.7", 65535);
    assert.deepEqual(decodeSockaddr(v4, v4.length), { family: "inet", address: "192.0.2.7", port: 65535 });
    const v6 = sockaddrIn6("::ffff:127.0.0.1", 9);
    assert.deepEqual(decodeSockaddr(v6, v6.length), {
      family: "inet6",
      address: "::ffff:127.0.0.1",
      port: 9,
    });
  });

  test("unix: unnamed, abstract and path names, by the length the kernel reported", () => {
    const buf = Buffer.alloc(110);
    buf.writeUInt16LE(1, 0);
    assert.deepEqual(decodeSockaddr(buf, 2), { family: "unix", name: "*" });
    sockaddrUn("\0abc").copy(buf);
    assert.deepEqual(decodeSockaddr(buf, 6), { family: "unix", name: "@abc" });
    buf.fill(0, 2);
    sockaddrUn("/p").copy(buf);
    assert.deepEqual(decodeSockaddr(buf, 5), { family: "unix", name: "/p" });
  });

  test("an unknown family is a SockaddrError", () => {
    assert.throws(() => decodeSockaddr(hex("1000 0000"), 4), SockaddrError);
  });
});
