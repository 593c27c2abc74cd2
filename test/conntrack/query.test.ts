/**
 * Conntrack queries without root: bad input as ConntrackQueryError naming the field, the dump
 * filters a query turns into (one per family where the kernel needs one, IPv6 addresses left to
 * user space), the user-space check, and deletion refusing an empty selection before anything runs.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConntrackQueryError, deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { planConntrack } from "../../src/conntrack/query.js";
import { EntryDecoder } from "../../src/ctnl/index.js";
import { EmptySelectionError } from "../../src/run/index.js";
import { entryPayload, type TestEntry } from "../ctnl/ct-layout.js";

const entry = (e: TestEntry) => {
  const p = entryPayload(e);
  return new EntryDecoder().decode(p, 0, p.length);
};

describe("planConntrack", () => {
  const bad: [string, object, string][] = [
    ["an address that is none", { reply: { src: "10.0.0.300" } }, "reply.src"],
    ["a port out of range", { protocol: "udp", original: { dport: 70000 } }, "original.dport"],
    ["an unknown protocol", { protocol: "quic" }, "protocol"],
    ["ports of a protocol without them", { protocol: "icmp", original: { sport: 1 } }, "original.sport"],
    [
      "an IPv4 address in an IPv6 selection",
      { family: "inet6", original: { src: "10.0.0.1" } },
      "original.src",
    ],
    ["two families in one selection", { original: { src: "10.0.0.1", dst: "fd00::1" } }, "original.dst"],
    ["a zone out of range", { zone: 70000 }, "zone"],
    ["a mark out of range", { mark: 2 ** 33 }, "mark"],
    ["an unknown family", { family: "unix" }, "family"],
    ["a bad alternative", { anyOf: [{ reply: { src: "x" } }] }, "anyOf[0].reply.src"],
  ];
  for (const [what, query, field] of bad) {
    test(`refuses ${what}, naming ${field}`, () => {
      assert.throws(
        () => planConntrack(query as never),
        (err: unknown) =>
          err instanceof ConntrackQueryError &&
          err.field === field &&
          err.code === "ERR_SOCKDIAG_CONNTRACK_QUERY",
      );
    });
  }

  test("IPv4 reply source and port: one IPv4 dump, filtered in the kernel", () => {
    const plan = planConntrack({ protocol: "udp", reply: { src: "10.244.0.7", sport: 53 } });
    assert.deepEqual(plan.filters, [
      { family: 2, protocol: 17, reply: { src: Uint8Array.from([10, 244, 0, 7]), sport: 53 } },
    ]);
    assert.ok(plan.narrow);
  });

  test("a protocol without family: one filtered dump per family (the kernel matches nothing with AF_UNSPEC)", () => {
    const plan = planConntrack({ protocol: "tcp" });
    assert.deepEqual(plan.filters, [
      { family: 2, protocol: 6 },
      { family: 10, protocol: 6 },
    ]);
    assert.equal(plan.narrow, false, "a protocol alone is an empty selection for deleting");
  });

  test("nothing the kernel can filter without a family: one dump of both; a mark goes along", () => {
    assert.deepEqual(planConntrack({}).filters, [{ family: 0 }]);
    assert.deepEqual(planConntrack({ mark: 5, markMask: 0xff }).filters, [
      { family: 0, mark: { value: 5, mask: 0xff } },
    ]);
  });

  test("IPv6 addresses are checked in user space only; ports still go to the kernel", () => {
    const plan = planConntrack({ protocol: "udp", reply: { src: "FD00::0:7", sport: 53 } });
    assert.deepEqual(plan.filters, [{ family: 10, protocol: 17, reply: { sport: 53 } }]);
    const yes = entry({
      proto: 17,
      orig: { src: "fd00::1", dst: "fd00::9", sport: 9, dport: 53 },
      reply: { src: "fd00::7", dst: "fd00::1", sport: 53, dport: 9 },
    });
    const no = entry({
      proto: 17,
      orig: { src: "fd00::1", dst: "fd00::9", sport: 9, dport: 53 },
      reply: { src: "fd00::8", dst: "fd00::1", sport: 53, dport: 9 },
    });
    assert.equal(plan.matches(yes), true, "the address is compared in canonical form");
    assert.equal(plan.matches(no), false);
  });

  test("alternatives of two families: a dump per family with what its alternatives share", () => {
    const plan = planConntrack({
      protocol: "udp",
      anyOf: [
        { family: "inet", reply: { src: "10.0.0.5", sport: 53 } },
        { family: "inet6", reply: { src: "::ffff:10.0.0.5", sport: 53 } },
      ],
    });
    assert.deepEqual(plan.filters, [
      { family: 2, protocol: 17, reply: { src: Uint8Array.from([10, 0, 0, 5]), sport: 53 } },
      { family: 10, protocol: 17, reply: { sport: 53 } },
    ]);
    const v4 = entry({
      proto: 17,
      orig: { src: "10.1.1.1", dst: "10.96.0.1", sport: 5, dport: 53 },
      reply: { src: "10.0.0.5", dst: "10.1.1.1", sport: 53, dport: 5 },
    });
    const other = entry({
      proto: 17,
      orig: { src: "10.1.1.1", dst: "10.96.0.1", sport: 5, dport: 53 },
      reply: { src: "10.0.0.6", dst: "10.1.1.1", sport: 53, dport: 5 },
    });
    assert.equal(plan.matches(v4), true);
    assert.equal(plan.matches(other), false);
  });

  test("an empty list of alternatives matches nothing, and needs no dump", () => {
    const plan = planConntrack({ anyOf: [] });
    assert.equal(plan.nothing, true);
    assert.deepEqual(listConntrack({ anyOf: [], netns: "no-such-namespace-sdt" }), []);
  });
});

describe("deleteConntrack refuses an empty selection", () => {
  for (const query of [
    {},
    { protocol: "udp" },
    { family: "inet6" as const },
    { anyOf: [{ protocol: "tcp" }] },
  ]) {
    test(`${JSON.stringify(query)} throws EmptySelectionError before opening anything`, () => {
      // The namespace does not exist: the refusal must come before any attempt to open it.
      assert.throws(() => deleteConntrack({ ...query, netns: "no-such-namespace-sdt" }), EmptySelectionError);
    });
  }
  test("an empty list of alternatives deletes nothing (never everything)", () => {
    const r = deleteConntrack({ anyOf: [], netns: "no-such-namespace-sdt" });
    assert.equal(r.matched, 0);
    assert.deepEqual(r.namespaces, []);
  });
});
