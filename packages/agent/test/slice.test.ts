import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { keyText, parseKeyText } from "../src/backend.js";
import { readSlice, type SliceRead } from "../src/slice.js";
import { endpointSlice } from "./kit/index.js";

const BOTH = new Set(["udp", "tcp"] as const);
const UDP = new Set(["udp"] as const);

/** The keys of a read slice, each with whether it is terminating. */
const listed = (read: SliceRead) =>
  (read.content?.keys ?? []).map((k) => [keyText(k), read.content?.terminating?.has(k) ?? false]);
const reasons = (read: SliceRead) => read.skipped.map((s) => s.reason);

/** A well-formed UDP slice as raw JSON, with `change` applied to it. */
function raw(change: (slice: Record<string, unknown>) => void = () => {}): unknown {
  const slice = JSON.parse(
    JSON.stringify(
      endpointSlice({
        name: "s",
        service: "dns",
        ports: [{ name: "dns", port: 53, protocol: "UDP" }],
        endpoints: [{ addresses: ["10.0.0.1"] }, { addresses: ["10.0.0.2"] }],
      }),
    ),
  ) as Record<string, unknown>;
  change(slice);
  return slice;
}

describe("readSlice", () => {
  test("every address times every port of a chosen protocol; absent protocol means TCP", () => {
    const read = readSlice(
      endpointSlice({
        namespace: "kube-system",
        name: "kube-dns-x1",
        service: "kube-dns",
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "dns-tcp", port: 53 },
          { port: 9153, protocol: "SCTP" },
        ],
        endpoints: [{ addresses: ["10.0.0.1"] }, { addresses: ["10.0.0.2"], terminating: true }],
      }),
      BOTH,
    );
    assert.equal(read.content?.id, "kube-system/kube-dns-x1");
    assert.equal(read.content?.service, "kube-system/kube-dns");
    assert.deepEqual(listed(read), [
      ["10.0.0.1:53/udp", false],
      ["10.0.0.1:53/tcp", false],
      ["10.0.0.2:53/udp", true],
      ["10.0.0.2:53/tcp", true],
    ]);
    assert.deepEqual(read.skipped, [], "SCTP is ignored, not skipped");
    const udpOnly = readSlice(raw(), UDP);
    assert.deepEqual(udpOnly.content?.keys.map(keyText), ["10.0.0.1:53/udp", "10.0.0.2:53/udp"]);
  });

  test("IPv6 addresses are canonical, v4-mapped ones are their IPv4 backend; FQDN and portless slices are skipped with a reason", () => {
    const v6 = readSlice(
      endpointSlice({
        name: "v6",
        service: "x",
        addressType: "IPv6",
        ports: [{ port: 53, protocol: "UDP" }],
        endpoints: [{ addresses: ["fd00:0:0::05", "::ffff:10.0.0.7", "not-an-ip", "10.0.0.8"] }],
      }),
      BOTH,
    );
    assert.deepEqual(v6.content?.keys.map(keyText), ["[fd00::5]:53/udp", "10.0.0.7:53/udp"]);
    assert.deepEqual(reasons(v6), ["address", "address"], "a name, and an IPv4 address in an IPv6 slice");
    const fqdn = readSlice(
      endpointSlice({
        name: "f",
        service: "x",
        addressType: "FQDN",
        ports: [{ port: 53, protocol: "UDP" }],
        endpoints: [{ addresses: ["a.example"] }],
      }),
      BOTH,
    );
    assert.deepEqual(fqdn.content?.keys.map(keyText), []);
    assert.deepEqual(reasons(fqdn), ["addressType"]);
    const headless = readSlice(
      endpointSlice({
        name: "h",
        service: "x",
        ports: [{ protocol: "UDP" }],
        endpoints: [{ addresses: ["10.0.0.1"] }],
      }),
      BOTH,
    );
    assert.deepEqual(headless.content?.keys.map(keyText), []);
    assert.deepEqual(reasons(headless), ["port"]);
    const none = readSlice(
      endpointSlice({ name: "n", service: "x", ports: [], endpoints: [{ addresses: ["10.0.0.1"] }] }),
      BOTH,
    );
    assert.deepEqual(reasons(none), ["ports"]);
  });

  test("malformed parts are skipped, each with its reason; the rest of the slice still counts", () => {
    const cases: [string, (s: Record<string, unknown>) => void, string[], string[]][] = [
      ["no metadata", (s) => delete s.metadata, [], ["metadata"]],
      ["metadata null", (s) => (s.metadata = null), [], ["metadata"]],
      ["no name", (s) => delete (s.metadata as Record<string, unknown>).name, [], ["metadata"]],
      ["endpoint null", (s) => (s.endpoints as unknown[]).push(null), ["10.0.0.1", "10.0.0.2"], ["endpoint"]],
      ["endpoints not a list", (s) => (s.endpoints = "x"), [], ["endpoint"]],
      [
        "addresses null",
        (s) => ((s.endpoints as Record<string, unknown>[])[0]!.addresses = null),
        ["10.0.0.2"],
        ["endpoint"],
      ],
      [
        "address empty",
        (s) => ((s.endpoints as Record<string, unknown>[])[0]!.addresses = [""]),
        ["10.0.0.2"],
        ["address"],
      ],
      [
        "address unspecified",
        (s) => ((s.endpoints as Record<string, unknown>[])[0]!.addresses = ["0.0.0.0"]),
        ["10.0.0.2"],
        ["address"],
      ],
      [
        "address a number",
        (s) => ((s.endpoints as Record<string, unknown>[])[0]!.addresses = [7]),
        ["10.0.0.2"],
        ["address"],
      ],
      ["port 0", (s) => ((s.ports as Record<string, unknown>[])[0]!.port = 0), [], ["port"]],
      ["port 70000", (s) => ((s.ports as Record<string, unknown>[])[0]!.port = 70000), [], ["port"]],
      ["port 53.5", (s) => ((s.ports as Record<string, unknown>[])[0]!.port = 53.5), [], ["port"]],
      ["port a string", (s) => ((s.ports as Record<string, unknown>[])[0]!.port = "53"), [], ["port"]],
      ["port null", (s) => (s.ports as unknown[]).push(null), ["10.0.0.1", "10.0.0.2"], ["port"]],
      [
        "unknown protocol",
        (s) => ((s.ports as Record<string, unknown>[])[0]!.protocol = "QUIC"),
        [],
        ["protocol"],
      ],
      [
        "lower-case protocol",
        (s) => ((s.ports as Record<string, unknown>[])[0]!.protocol = "udp"),
        [],
        ["protocol"],
      ],
      ["addressType absent", (s) => delete s.addressType, [], ["addressType"]],
      [
        "conditions not an object",
        (s) => ((s.endpoints as Record<string, unknown>[])[0]!.conditions = 5),
        ["10.0.0.1", "10.0.0.2"],
        [],
      ],
    ];
    for (const [what, change, addresses, expected] of cases) {
      const read = readSlice(raw(change), UDP);
      assert.deepEqual(
        (read.content?.keys ?? []).map(keyText),
        addresses.map((a) => `${a}:53/udp`),
        what,
      );
      assert.deepEqual(reasons(read), expected, what);
    }
  });

  test("any JSON value is read without throwing, and names only valid backends", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), (endpoints, ports, metadata) => {
        const read = readSlice(
          raw((s) => Object.assign(s, { endpoints, ports, metadata })),
          BOTH,
        );
        for (const key of read.content?.keys ?? [])
          assert.match(keyText(key), /^(\d+\.){3}\d+:\d+\/(udp|tcp)$/);
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        readSlice(value, BOTH);
      }),
    );
  });
});

describe("readSlice: serving, as the API defines the conditions", () => {
  test("serving, else ready, else true; an endpoint that does not serve is not listed, terminating or not", () => {
    const cases: [Record<string, boolean>, "serving" | "terminating" | "absent"][] = [
      [{}, "serving"],
      [{ ready: true }, "serving"],
      [{ ready: false }, "absent"],
      [{ ready: false, serving: false, terminating: false }, "absent"],
      [{ ready: false, serving: true }, "serving"],
      [{ ready: true, serving: false }, "absent"],
      [{ terminating: true }, "terminating"],
      [{ ready: false, serving: true, terminating: true }, "terminating"],
      [{ ready: false, serving: false, terminating: true }, "absent"],
      [{ ready: false, terminating: true }, "absent"],
    ];
    for (const [conditions, expected] of cases) {
      const read = readSlice(
        raw((s) => {
          (s.endpoints as Record<string, unknown>[])[0]!.conditions = conditions;
        }),
        UDP,
      );
      const key = parseKeyText("10.0.0.1:53/udp")!;
      const status = !read.content?.keys.includes(key)
        ? "absent"
        : read.content.terminating?.has(key)
          ? "terminating"
          : "serving";
      assert.equal(status, expected, JSON.stringify(conditions));
      assert.ok(
        read.content?.keys.includes(parseKeyText("10.0.0.2:53/udp")!),
        "the other endpoint is still read",
      );
    }
  });

  test("what kube-proxy chooses by: the ports' groups, the ready endpoints, each terminating backend's groups, whose the not ready listings are", () => {
    const read = readSlice(
      endpointSlice({
        namespace: "kube-system",
        name: "dns-x",
        service: "kube-dns",
        addressType: "IPv6",
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "dns-alt", port: 53, protocol: "UDP" },
          { name: "metrics", port: 9153, protocol: "TCP" },
        ],
        endpoints: [
          { addresses: ["fd00::1"], ready: true, pod: "p1" },
          { addresses: ["fd00::2"], ready: false, serving: true, terminating: true, pod: "p2" },
          { addresses: ["fd00::3"], ready: false, serving: false, pod: "p3" },
          { addresses: ["fd00::4", "not an address"] },
          { addresses: ["not an address"], ready: true },
        ],
      }),
      UDP,
    );
    const content = read.content!;
    assert.deepEqual(content.groups, [
      "kube-system/kube-dns dns UDP IPv6",
      "kube-system/kube-dns dns-alt UDP IPv6",
    ]);
    assert.equal(content.ready, 2, "fd00::1 and fd00::4; not the endpoint without an address");
    assert.deepEqual(
      [...(content.terminating ?? [])].map(([key, groups]) => [keyText(key), groups]),
      [["[fd00::2]:53/udp", content.groups]],
    );
    assert.deepEqual(
      content.notReady?.map(({ key, pod }) => ({ key: keyText(key), pod })),
      [
        { key: "[fd00::2]:53/udp", pod: "p2" },
        { key: "[fd00::2]:53/udp", pod: "p2" },
        { key: "[fd00::3]:53/udp", pod: "p3" },
        { key: "[fd00::3]:53/udp", pod: "p3" },
      ],
    );
    assert.deepEqual(content.keys.map(keyText), ["[fd00::1]:53/udp", "[fd00::2]:53/udp", "[fd00::4]:53/udp"]);
    const unlabelled = readSlice(
      endpointSlice({
        name: "x",
        ports: [{ port: 53, protocol: "UDP" }],
        endpoints: [{ addresses: ["10.0.0.1"] }],
      }),
      UDP,
    );
    assert.deepEqual(unlabelled.content?.groups, ["(slice default/x)  UDP IPv4"]);
  });
});
