import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readSlice } from "../src/slice.js";
import { endpointSlice } from "./kit/index.js";

const BOTH = new Set(["udp", "tcp"] as const);

describe("readSlice", () => {
  test("every address times every port of a chosen protocol; absent protocol means TCP", () => {
    const content = readSlice(
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
    assert.equal(content.id, "kube-system/kube-dns-x1");
    assert.equal(content.service, "kube-system/kube-dns");
    assert.deepEqual(
      [...content.backends].map(([k, v]) => [k, v.terminating]),
      [
        ["10.0.0.1:53/udp", false],
        ["10.0.0.1:53/tcp", false],
        ["10.0.0.2:53/udp", true],
        ["10.0.0.2:53/tcp", true],
      ],
    );
    const udpOnly = readSlice(
      endpointSlice({
        name: "s",
        service: "x",
        ports: [{ port: 53, protocol: "UDP" }, { port: 80 }],
        endpoints: [{ addresses: ["10.0.0.1"] }],
      }),
      new Set(["udp"] as const),
    );
    assert.deepEqual([...udpOnly.backends.keys()], ["10.0.0.1:53/udp"]);
  });

  test("IPv6 addresses are canonical; FQDN, portless and bad entries are skipped with a reason", () => {
    const v6 = readSlice(
      endpointSlice({
        name: "v6",
        service: "x",
        addressType: "IPv6",
        ports: [{ port: 53, protocol: "UDP" }],
        endpoints: [{ addresses: ["fd00:0:0::05", "not-an-ip"] }],
      }),
      BOTH,
    );
    assert.deepEqual([...v6.backends.keys()], ["[fd00::5]:53/udp"]);
    assert.match(v6.skipped.join(";"), /not-an-ip/);
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
    assert.equal(fqdn.backends.size, 0);
    assert.deepEqual(fqdn.skipped, ["addressType FQDN"]);
    const headless = readSlice(
      endpointSlice({
        name: "h",
        service: "x",
        ports: [{ protocol: "UDP" }],
        endpoints: [{ addresses: ["10.0.0.1"] }],
      }),
      BOTH,
    );
    assert.equal(headless.backends.size, 0);
    assert.match(headless.skipped.join(";"), /no number/);
    const none = readSlice(
      endpointSlice({ name: "n", service: "x", ports: [], endpoints: [{ addresses: ["10.0.0.1"] }] }),
      BOTH,
    );
    assert.deepEqual(none.skipped, ["no ports"]);
  });
});
