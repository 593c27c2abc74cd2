/**
 * Address formatting: RFC 5952 cases by hand, and random addresses cross-checked against two
 * independent formatters in node — SocketAddress (libuv's inet_ntop, the same algorithm as glibc's
 * that ss prints with) and the WHATWG URL host serialiser.
 */
import assert from "node:assert/strict";
import { isIPv4, isIPv6, SocketAddress } from "node:net";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  AddressTexts,
  addressWords,
  formatIPv4,
  formatIPv6,
  isV4Mapped,
  parseIPv6,
} from "../../src/diag/address.js";

/** The four big-endian words of an IPv6 text, parsed by node (not by sockdiag). */
function words(text: string): [number, number, number, number] {
  const hex = new URL(`http://[${text}]`).hostname.slice(1, -1);
  const [head = "", tail] = hex.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right].map((g) =>
    Number.parseInt(g, 16),
  );
  return [0, 2, 4, 6].map((i) => ((groups[i]! << 16) | groups[i + 1]!) >>> 0) as [
    number,
    number,
    number,
    number,
  ];
}

const fmt = (text: string) => formatIPv6(...words(text));

const ntop = (w: readonly number[]) => new SocketAddress({ address: groupsText(w), family: "ipv6" }).address;
const urlHost = (w: readonly number[]) => new URL(`http://[${groupsText(w)}]`).hostname.slice(1, -1);
/** Uncompressed "a:b:c:d:e:f:g:h" text of four words. */
const groupsText = (w: readonly number[]) =>
  w.flatMap((x) => [(x >>> 16).toString(16), (x & 0xffff).toString(16)]).join(":");

describe("formatIPv4", () => {
  test("dotted quad from one big-endian word", () => {
    assert.equal(formatIPv4(0x7f000001), "127.0.0.1");
    assert.equal(formatIPv4(0), "0.0.0.0");
    assert.equal(formatIPv4(0xffffffff), "255.255.255.255");
    assert.equal(formatIPv4(0xc0a8010a), "192.168.1.10");
  });
});

describe("formatIPv6: RFC 5952", () => {
  const cases: [string, string][] = [
    ["0:0:0:0:0:0:0:0", "::"],
    ["0:0:0:0:0:0:0:1", "::1"],
    ["1:0:0:0:0:0:0:0", "1::"],
    ["2001:db8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:DB8:0:0:0:0:0:ABCD", "2001:db8::abcd"], // 4.3: lower case
    ["2001:0db8:0:0:0:0:0:0001", "2001:db8::1"], // 4.1: no leading zeros
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"], // 4.2.2: a single zero group stays
    ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1"], // 4.2.3: the longest run
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], // 4.2.3: the first of equal runs
    ["0:0:1:0:0:0:0:0", "0:0:1::"],
    ["fe80:0:0:0:0:0:0:0", "fe80::"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["1:0:2:0:3:0:4:0", "1:0:2:0:3:0:4:0"],
    ["0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1"], // 5: v4-mapped keeps the dotted quad
    ["0:0:0:0:0:ffff:0:0", "::ffff:0.0.0.0"],
    ["0:0:0:0:ffff:0:7f00:1", "::ffff:0:7f00:1"], // SIIT-translated, not v4-mapped
  ];
  for (const [input, output] of cases) {
    test(`${input} -> ${output}`, () => {
      assert.equal(fmt(input), output);
      assert.equal(ntop(words(input)), output, "node's inet_ntop agrees (checks the case itself)");
    });
  }

  test("isV4Mapped: exactly ::ffff:0:0/96", () => {
    assert.equal(isV4Mapped(0, 0, 0xffff), true);
    assert.equal(isV4Mapped(0, 0, 0xfffe), false);
    assert.equal(isV4Mapped(0, 1, 0xffff), false);
    assert.equal(isV4Mapped(0, 0, 0xffff0000), false);
  });

  test("IPv4-compatible ::a.b.c.d prints as inet_ntop (and ss) print it", () => {
    // glibc and libuv inet_ntop both print ::1.2.3.4 for the deprecated IPv4-compatible form.
    assert.equal(formatIPv6(0, 0, 0, 0x01020304), ntop([0, 0, 0, 0x01020304]));
  });
});

/** Groups biased towards zero so that runs of every length and position occur. */
const group = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.integer({ min: 0, max: 0xffff }), weight: 2 },
);
const address = fc
  .array(group, { minLength: 8, maxLength: 8 })
  .map((g) => [0, 2, 4, 6].map((i) => ((g[i]! << 16) | g[i + 1]!) >>> 0));
/** ::a.b.c.d (first six groups zero, seventh not): inet_ntop's deprecated IPv4-compatible form. */
const compatible = (w: readonly number[]) => w[0] === 0 && w[1] === 0 && w[2] === 0 && w[3]! >>> 16 !== 0;

describe("formatIPv6 cross-checked on random addresses", () => {
  test("equals inet_ntop (node SocketAddress) for every address", () => {
    fc.assert(
      fc.property(address, (w) => {
        assert.equal(formatIPv6(w[0]!, w[1]!, w[2]!, w[3]!), ntop(w));
      }),
      { numRuns: 2000 },
    );
  });

  test("equals the WHATWG URL serialisation for every address but the embedded-IPv4 forms", () => {
    fc.assert(
      fc.property(address, (w) => {
        // URLs never embed IPv4 text; inet_ntop does for v4-mapped and IPv4-compatible addresses.
        fc.pre(!isV4Mapped(w[0]!, w[1]!, w[2]!) && !compatible(w));
        assert.equal(formatIPv6(w[0]!, w[1]!, w[2]!, w[3]!), urlHost(w));
      }),
      { numRuns: 2000 },
    );
  });

  test("v4-mapped addresses print as ::ffff: and formatIPv4 of the last word", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (v4) => {
        assert.equal(formatIPv6(0, 0, 0xffff, v4), `::ffff:${formatIPv4(v4)}`);
        assert.equal(formatIPv6(0, 0, 0xffff, v4), ntop([0, 0, 0xffff, v4]));
      }),
    );
  });
});

describe("AddressTexts", () => {
  // Pools larger than its 128 slots a side, so that addresses replace each other in a slot.
  const v4 = fc.integer({ min: 0, max: 0xffffffff });
  const entry = fc.oneof(
    v4.map((w) => ({ v6: false, w: [w, 0, 0, 0] })),
    address.map((w) => ({ v6: true, w })),
  );

  test("gives every address its own text, whatever came before it, on either side", () => {
    fc.assert(
      fc.property(
        fc.array(entry, { minLength: 300, maxLength: 400 }),
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1000, maxLength: 2000 }),
        (pool, picks) => {
          const texts = new AddressTexts();
          const view = new DataView(new ArrayBuffer(16));
          for (const [n, src] of picks) {
            const { v6, w } = pool[n % pool.length]!;
            for (let i = 0; i < 4; i++) view.setUint32(4 * i, w[i]!);
            const want = v6 ? ntop(w) : formatIPv4(w[0]!);
            assert.equal(src ? texts.src(view, 0, v6) : texts.dst(view, 0, v6), want);
          }
        },
      ),
      { numRuns: 20 },
    );
  });

  test("tells apart an IPv4 address from the IPv6 address whose first word it is", () => {
    const texts = new AddressTexts();
    const view = new DataView(new ArrayBuffer(16));
    view.setUint32(0, 0x7f000001);
    assert.equal(texts.src(view, 0, false), "127.0.0.1");
    assert.equal(texts.src(view, 0, true), "7f00:1::");
    assert.equal(texts.src(view, 0, false), "127.0.0.1");
  });
});

describe("parsing address texts, cross-checked against node's inet_pton (net.isIPv4, net.isIPv6)", () => {
  const chars = (alphabet: string, maxLength: number) =>
    fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(""));
  const group = fc
    .integer({ min: 0, max: 0xffff })
    .chain((g) =>
      fc.constantFrom(g.toString(16), g.toString(16).toUpperCase(), g.toString(16).padStart(4, "0")),
    );
  const dottedQuad = fc
    .tuple(...[0, 1, 2, 3].map(() => fc.integer({ min: 0, max: 255 })))
    .map((b) => b.join("."));
  // Addresses as people write them: groups, a "::" anywhere (or none), an IPv4 tail, and some damage.
  const written = fc
    .tuple(
      fc.array(group, { minLength: 0, maxLength: 9 }),
      fc.integer({ min: -1, max: 9 }),
      fc.option(dottedQuad),
      fc.option(chars("0123456789abcdefABCDEFG:.", 3)),
    )
    .map(([groups, gap, v4, damage]) => {
      const parts = [...groups, ...(v4 ? [v4] : [])];
      let text = parts.join(":");
      if (gap >= 0 && gap <= parts.length)
        text = `${parts.slice(0, gap).join(":")}::${parts.slice(gap).join(":")}`;
      return damage ? text + damage : text;
    });
  const anyText = fc.oneof(written, chars("0123456789abcdefABCDEF:.", 40), chars("0123456789.", 18));

  test("parseIPv6 accepts exactly what inet_pton(AF_INET6) accepts, with the same words", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const parsed = parseIPv6(text);
        assert.equal(parsed !== undefined, isIPv6(text), text);
        if (parsed) assert.deepEqual(parsed, words(text), text);
      }),
      { numRuns: 20_000 },
    );
  });

  test("addressWords of an IPv4 text accepts exactly what inet_pton(AF_INET) accepts", () => {
    fc.assert(
      fc.property(fc.oneof(dottedQuad, chars("0123456789.", 18), chars("0123456789.:a", 12)), (text) => {
        const w = addressWords(text, false);
        assert.equal(w !== undefined, isIPv4(text), text);
        if (w) assert.deepEqual(w, [text.split(".").reduce((a, p) => a * 256 + Number(p), 0), 0, 0, 0]);
      }),
      { numRuns: 20_000 },
    );
  });

  test("addressWords answers are frozen, and a text of the other family is refused", () => {
    const w = addressWords("192.0.2.1", false)!;
    assert.ok(Object.isFrozen(w));
    assert.equal(addressWords("192.0.2.1", true), undefined);
    assert.equal(addressWords("::ffff:192.0.2.1", false), undefined);
    assert.deepEqual(addressWords("::ffff:192.0.2.1", true), [0, 0, 0xffff, 0xc0000201]);
  });
});
