/**
 * Backend addresses: parseBackend and checkBackend accept exactly IP:PORT and [IPv6]:PORT, and every
 * entry point (parseBackend, BackendTerminator.terminate, terminateUDPConnectionsToBackend) throws
 * an AddressError naming the input and the problem before it touches any namespace.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  AddressError,
  BackendTerminator,
  parseBackend,
  type TerminatorSeam,
  terminateUDPConnectionsToBackend,
} from "../../src/terminator/index.js";

/** [input, the detail the message must contain] */
const BAD: readonly [string, RegExp][] = [
  ["300.1.1.1:53", /"300\.1\.1\.1" is not an IPv4 or IPv6 address/],
  ["10.0.0.1", /a port is missing/],
  ["[fd00::5]", /a port is missing/],
  ["::1:53", /a port is missing/],
  ["10.0.0.1:", /a port is missing/],
  ["10.0.0.1:99999", /port 99999 is out of range \(1-65535\)/],
  ["127.0.0.1:0", /port 0 is out of range/],
  ["[::1]:65536", /port 65536 is out of range/],
  ["10.0.0.1:-1", /expected IP:PORT or \[IPv6\]:PORT/],
  ["10.0.0.1:dns", /expected IP:PORT/],
  ["", /expected IP:PORT/],
  [":53", /"" is not an IPv4 or IPv6 address/],
  ["[127.0.0.1]:53", /brackets are for IPv6 addresses only/],
  ["[fe80::1%eth0]:53", /"fe80::1%eth0" has a zone index, which is not supported/],
  ["localhost:53", /"localhost" is not an IPv4 or IPv6 address/],
];

/** Collaborators that fail the test if the terminator touches anything. */
const untouchable: TerminatorSeam = {
  open: () => assert.fail("no netlink connection may be opened"),
  targets: () => assert.fail("no namespace may be visited"),
};

describe("parseBackend", () => {
  test("accepts IPv4:PORT and [IPv6]:PORT", () => {
    assert.deepEqual(parseBackend("10.0.0.5:53"), {
      family: "inet",
      address: "10.0.0.5",
      port: 53,
    });
    assert.deepEqual(parseBackend("[fd00::5]:65535"), {
      family: "inet6",
      address: "fd00::5",
      port: 65535,
    });
  });

  test("a v4-mapped IPv6 backend is its IPv4 address", () => {
    assert.deepEqual(parseBackend("[::ffff:10.0.0.5]:1"), {
      family: "inet",
      address: "10.0.0.5",
      port: 1,
    });
  });

  for (const [input, detail] of BAD) {
    test(`rejects ${JSON.stringify(input)} with an AddressError naming it`, () => {
      assert.throws(
        () => parseBackend(input),
        (e: unknown) =>
          e instanceof AddressError &&
          e.input === input &&
          e.message.startsWith(`invalid backend "${input}": `) &&
          detail.test(e.message),
      );
    });
  }
});

describe("bad backends reach no namespace", () => {
  test("terminateUDPConnectionsToBackend throws the same AddressError as parseBackend", () => {
    for (const [input] of BAD) {
      const expected = (() => {
        try {
          parseBackend(input);
        } catch (e) {
          return e as AddressError;
        }
        return assert.fail(`${input} parsed`);
      })();
      assert.throws(
        () => terminateUDPConnectionsToBackend(input, { dryRun: true, netns: "/nonexistent/netns" }),
        (e: unknown) => e instanceof AddressError && e.message === expected.message && e.input === input,
      );
    }
  });

  test("BackendTerminator.terminate checks the address and port before touching anything", () => {
    const terminator = new BackendTerminator({}, untouchable);
    const cases: [string, number, RegExp][] = [
      ["300.1.1.1", 53, /invalid backend "300\.1\.1\.1:53": "300\.1\.1\.1" is not an IPv4/],
      ["10.0.0.1", 99999, /invalid backend "10\.0\.0\.1:99999": port 99999 is out of range/],
      ["127.0.0.1", 0, /port 0 is out of range/],
      ["127.0.0.1", 53.5, /port 53\.5 is out of range/],
      ["[::1]", 53, /"\[::1\]" is not an IPv4 or IPv6 address/],
    ];
    for (const [address, port, message] of cases) {
      assert.throws(() => terminator.terminate({ address, port }), AddressError);
      assert.throws(() => terminator.terminate({ address, port }), message);
    }
  });

  test("an unknown protocol is refused before touching anything", () => {
    const terminator = new BackendTerminator({}, untouchable);
    assert.throws(
      () => terminator.terminate({ address: "127.0.0.1", port: 53, protocol: "foo" as "udp" }),
      /invalid protocol "foo": expected udp, tcp or any/,
    );
  });
});
