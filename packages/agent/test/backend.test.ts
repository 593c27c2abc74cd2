import assert from "node:assert/strict";
import { isIPv4, SocketAddress } from "node:net";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  type AgentBackend,
  asBackend,
  backendKey,
  backendOf,
  backendText,
  canonicalAddress,
  isValidPort,
  keyText,
  parseBackendText,
  parseKeyText,
} from "../src/backend.js";

const protocol = fc.constantFrom("udp" as const, "tcp" as const);
/**
 * What SocketAddress (libuv's inet_ntop) prints, with the mapped form as its IPv4 address;
 * undefined for no backend's address.
 */
function reference(address: string): string | undefined {
  const text = new SocketAddress({ address, family: isIPv4(address) ? "ipv4" : "ipv6" }).address;
  const v4 = text.startsWith("::ffff:") ? text.slice(7) : "";
  const canonical = isIPv4(v4) ? v4 : text;
  return NO_BACKEND.has(canonical) ? undefined : canonical;
}
/** Any address a backend can have, in any spelling fast-check makes. */
const backendAddress = fc.oneof(fc.ipV4(), fc.ipV6()).filter((a) => reference(a) !== undefined);
const port = fc.integer({ min: 1, max: 65535 });
/** The addresses that are no backend (unspecified, limited broadcast), in canonical text. */
const NO_BACKEND = new Set(["0.0.0.0", "255.255.255.255", "::"]);
/** Any IPv4 address a backend can have as an integer, and its dotted and hexadecimal IPv6-mapped spellings. */
const v4 = fc.integer({ min: 1, max: 0xfffffffe }).map((n) => ({
  dotted: [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join("."),
  high: (n >>> 16).toString(16),
  low: (n & 0xffff).toString(16),
}));

describe("isValidPort", () => {
  test("an integer from 1 to 65535, nothing else", () => {
    for (const n of [1, 53, 65535]) assert.equal(isValidPort(n), true, String(n));
    for (const n of [0, -1, 65536, 53.5, Number.NaN, Number.POSITIVE_INFINITY, "53", null, undefined, 53n])
      assert.equal(isValidPort(n), false, String(n));
  });
});

describe("canonicalAddress", () => {
  test("IPv6 in RFC 5952 text; IPv4 as it is; not an address, a zone id, or no backend's address is undefined", () => {
    assert.equal(canonicalAddress("10.0.0.5"), "10.0.0.5");
    assert.equal(canonicalAddress("fd00:0:0::05"), "fd00::5");
    assert.equal(canonicalAddress("FD00::A"), "fd00::a");
    assert.equal(canonicalAddress("::1"), "::1");
    // Not mapped: the IPv4-compatible form and the ::ffff:0:a.b.c.d (SIIT) form stay IPv6.
    assert.equal(canonicalAddress("::a00:5"), "::10.0.0.5");
    assert.equal(canonicalAddress("::ffff:0:10.0.0.5"), "::ffff:0:a00:5");
    for (const bad of [
      "",
      "not-an-ip",
      "10.0.0.300",
      "010.0.0.5",
      "fe80::1%eth0",
      "::ffff:10.0.0.5%1",
      "[fd00::5]",
      "0.0.0.0",
      "255.255.255.255",
      "::",
      "0:0::0",
      "::ffff:0.0.0.0",
      "::ffff:255.255.255.255",
    ])
      assert.equal(canonicalAddress(bad), undefined, bad);
  });

  test("an IPv4-mapped IPv6 address is its IPv4 address, however it is spelled", () => {
    for (const spelling of [
      "::ffff:10.0.0.5",
      "::FFFF:10.0.0.5",
      "0:0:0:0:0:ffff:a00:5",
      "0:0:0:0:0:FFFF:0A00:0005",
      "::ffff:a00:5",
      "0::ffff:10.0.0.5",
    ])
      assert.equal(canonicalAddress(spelling), "10.0.0.5", spelling);
    fc.assert(
      fc.property(v4, ({ dotted, high, low }) => {
        assert.equal(canonicalAddress(`::ffff:${dotted}`), dotted);
        assert.equal(canonicalAddress(`0:0:0:0:0:FFFF:${high}:${low}`), dotted);
        assert.equal(canonicalAddress(`::ffff:${high}:${low}`), dotted);
      }),
    );
  });

  test("canonical text is a fixed point", () => {
    fc.assert(
      fc.property(backendAddress, (address) => {
        const canonical = canonicalAddress(address);
        assert.notEqual(canonical, undefined, address);
        assert.equal(canonicalAddress(canonical!), canonical);
      }),
    );
  });
});

describe("backendText and parseBackendText", () => {
  test("keys as the agent prints them, and back", () => {
    const cases: [AgentBackend, string][] = [
      [{ address: "10.0.0.5", port: 53, protocol: "udp" }, "10.0.0.5:53/udp"],
      [{ address: "fd00::5", port: 53, protocol: "udp" }, "[fd00::5]:53/udp"],
      [{ address: "::1", port: 65535, protocol: "tcp" }, "[::1]:65535/tcp"],
      [{ address: "0.0.0.1", port: 1, protocol: "tcp" }, "0.0.0.1:1/tcp"],
    ];
    for (const [backend, key] of cases) {
      assert.equal(backendText(backend), key);
      assert.deepEqual(parseBackendText(key), backend);
    }
  });

  test("round trip: every valid backend's key parses back to it", () => {
    fc.assert(
      fc.property(backendAddress, port, protocol, (raw, port, protocol) => {
        const backend = { address: canonicalAddress(raw)!, port, protocol };
        const key = backendText(backend);
        assert.deepEqual(parseBackendText(key), backend);
      }),
    );
  });

  test("a mapped address and its IPv4 address are one key", () => {
    const mapped = asBackend({ address: "::ffff:10.0.0.5", port: 53, protocol: "udp" });
    assert.deepEqual(mapped, { address: "10.0.0.5", port: 53, protocol: "udp" });
    assert.equal(backendText(mapped!), "10.0.0.5:53/udp");
    // The mapped spelling of a key is not canonical, so it is not a key.
    assert.equal(parseBackendText("[::ffff:10.0.0.5]:53/udp"), undefined);
    assert.equal(parseBackendText("[::ffff:a00:5]:53/udp"), undefined);
  });

  test("strict: anything but the exact canonical key of a valid backend is undefined", () => {
    for (const bad of [
      "",
      "10.0.0.5",
      "10.0.0.5:53",
      "10.0.0.5/udp",
      "10.0.0.5:/udp",
      "10.0.0.5:0/udp",
      "10.0.0.5:65536/udp",
      "10.0.0.5:053/udp",
      "10.0.0.5:+53/udp",
      "10.0.0.5:0x35/udp",
      "10.0.0.5:5e1/udp",
      "10.0.0.5:53.0/udp",
      "10.0.0.5: 53/udp",
      "10.0.0.5:53/UDP",
      "10.0.0.5:53/sctp",
      "10.0.0.5:53/udp ",
      " 10.0.0.5:53/udp",
      "10.0.0.5:53/udp/tcp",
      "10.0.0.300:53/udp",
      "[10.0.0.5]:53/udp",
      "fd00::5:53/udp",
      "[fd00::5:53/udp",
      "fd00::5]:53/udp",
      "[fd00:0::5]:53/udp",
      "[FD00::5]:53/udp",
      "[fe80::1%eth0]:53/udp",
      "[[fd00::5]]:53/udp",
      "host.example:53/udp",
      ":53/udp",
      "[]:53/udp",
      "0.0.0.0:53/udp",
      "[::]:53/udp",
      "255.255.255.255:53/udp",
    ])
      assert.equal(parseBackendText(bad), undefined, JSON.stringify(bad));
    assert.equal(parseBackendText(53 as unknown as string), undefined);
  });

  test("never throws; whatever it accepts prints back as the same key", () => {
    const keyish = fc.stringMatching(/^\[?[0-9a-fA-F:.%]{0,20}\]?:[0-9]{0,6}\/(udp|tcp|UDP|x)?$/);
    fc.assert(
      fc.property(fc.oneof(fc.string(), keyish), (text) => {
        const parsed = parseBackendText(text);
        if (parsed !== undefined) assert.equal(backendText(parsed), text);
      }),
      { numRuns: 2000 },
    );
  });

  test("a non-canonical spelling of an IPv6 address never parses", () => {
    fc.assert(
      fc.property(fc.ipV6(), port, protocol, (raw, port, protocol) => {
        const key = `[${raw}]:${port}/${protocol}`;
        const parsed = parseBackendText(key);
        if (canonicalAddress(raw) === raw) assert.deepEqual(parsed, { address: raw, port, protocol });
        else assert.equal(parsed, undefined, key);
      }),
    );
  });
});

describe("backendKey: a backend's identity as one number (IPv4) or bigint (IPv6)", () => {
  /** Any valid backend, its address canonical. */
  const backend = fc
    .tuple(backendAddress, port, protocol)
    .map(([raw, port, protocol]): AgentBackend => ({ address: canonicalAddress(raw)!, port, protocol }));

  test("IPv4 is a number, IPv6 a bigint; each names its backend back, and prints as its text", () => {
    const cases: [AgentBackend, "number" | "bigint"][] = [
      [{ address: "10.0.0.5", port: 53, protocol: "udp" }, "number"],
      [{ address: "0.0.0.1", port: 1, protocol: "tcp" }, "number"],
      [{ address: "255.255.255.254", port: 65535, protocol: "tcp" }, "number"],
      [{ address: "fd00::5", port: 53, protocol: "udp" }, "bigint"],
      [{ address: "::1", port: 65535, protocol: "tcp" }, "bigint"],
      [{ address: "::10.0.0.5", port: 53, protocol: "udp" }, "bigint"],
      [{ address: "::ffff:0:a00:5", port: 53, protocol: "udp" }, "bigint"],
      [{ address: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", port: 65535, protocol: "tcp" }, "bigint"],
      [{ address: "1:0:0:2::3", port: 8080, protocol: "tcp" }, "bigint"],
    ];
    for (const [b, type] of cases) {
      const key = backendKey(b);
      assert.equal(typeof key, type, backendText(b));
      assert.deepEqual(backendOf(key), b);
      assert.equal(keyText(key), backendText(b));
      assert.equal(parseKeyText(backendText(b)), key);
    }
    assert.ok(Number.isSafeInteger(backendKey(cases[2]![0])), "the largest IPv4 key is exact");
  });

  test("round trip: every valid backend's key names it back", () => {
    fc.assert(
      fc.property(backend, (b) => {
        assert.deepEqual(backendOf(backendKey(b)), b);
        assert.equal(parseKeyText(keyText(backendKey(b))), backendKey(b));
      }),
      { numRuns: 2000 },
    );
  });

  test("a mapped address is its IPv4 backend's key, however it is spelled", () => {
    fc.assert(
      fc.property(v4, port, protocol, ({ dotted, high, low }, port, protocol) => {
        const key = backendKey({ address: dotted, port, protocol });
        for (const spelling of [`::ffff:${dotted}`, `::ffff:${high}:${low}`, `0:0:0:0:0:FFFF:${high}:${low}`])
          assert.equal(backendKey(asBackend({ address: spelling, port, protocol })!), key, spelling);
      }),
    );
  });

  test("two backends have the same key exactly when they are the same backend, as a Map tells them", () => {
    fc.assert(
      fc.property(backend, backend, (a, b) => {
        const same = backendText(a) === backendText(b);
        assert.equal(backendKey(a) === backendKey(b), same, `${backendText(a)} ${backendText(b)}`);
        const map = new Map([[backendKey(a), "a"]]);
        assert.equal(map.get(backendKey({ ...b })), same ? "a" : undefined);
      }),
      { numRuns: 5000 },
    );
    // Neighbours differ: the port, the protocol, the address's last bit, the family.
    const base: AgentBackend = { address: "10.0.0.4", port: 53, protocol: "udp" };
    const keys = [
      base,
      { ...base, port: 54 },
      { ...base, protocol: "tcp" },
      { ...base, address: "10.0.0.5" },
      { ...base, address: "::10.0.0.4" },
      { ...base, address: "::ffff:0:a00:4" },
      { ...base, address: "fd00::a00:4" },
    ].map((b) => backendKey(b as AgentBackend));
    assert.equal(new Set(keys).size, keys.length);
  });

  test("an address that is not canonical has no key", () => {
    for (const address of ["fd00:0::5", "FD00::5", "::ffff:10.0.0.5", "010.0.0.5", "10.0.0.5 ", "not-an-ip"])
      assert.throws(() => backendKey({ address, port: 53, protocol: "udp" }), RangeError, address);
  });
});

describe("asBackend", () => {
  test("checks what a version 1 state file holds and makes the address canonical", () => {
    assert.deepEqual(asBackend({ address: "fd00:0::5", port: 53, protocol: "tcp", services: [] }), {
      address: "fd00::5",
      port: 53,
      protocol: "tcp",
    });
    for (const bad of [
      null,
      "10.0.0.5:53/udp",
      { address: "10.0.0.5", port: 0, protocol: "udp" },
      { address: "10.0.0.5", port: "53", protocol: "udp" },
      { address: "10.0.0.5", port: 53, protocol: "sctp" },
      { address: "fe80::1%eth0", port: 53, protocol: "udp" },
      { port: 53, protocol: "udp" },
    ])
      assert.equal(asBackend(bad), undefined, JSON.stringify(bad));
  });
});

describe("canonicalAddress against Node's own printer", () => {
  /** Eight words, zero-heavy so that runs of zeros of every length and place come up. */
  const words = fc.array(fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff })), {
    minLength: 8,
    maxLength: 8,
  });

  test("every spelling fast-check makes", () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) =>
        assert.equal(canonicalAddress(address), reference(address), address),
      ),
      { numRuns: 5000 },
    );
  });

  test("every eight words, spelled in full, compressed, upper case and with a dotted tail", () => {
    fc.assert(
      fc.property(words, (w) => {
        const full = w.map((x) => x.toString(16)).join(":");
        const padded = w.map((x) => x.toString(16).padStart(4, "0").toUpperCase()).join(":");
        const tail = `${w
          .slice(0, 6)
          .map((x) => x.toString(16))
          .join(":")}:${w[6]! >> 8}.${w[6]! & 255}.${w[7]! >> 8}.${w[7]! & 255}`;
        const expected = reference(full);
        for (const spelling of [full, padded, tail, expected ?? full])
          assert.equal(canonicalAddress(spelling), expected, spelling);
      }),
      { numRuns: 5000 },
    );
  });
});
