/**
 * BackendSet without a kernel: backends checked and deduplicated, one query for all of them, and
 * each matched socket attributed to exactly one backend by address, port and protocol.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { BackendSet } from "../../src/terminator/backend-set.js";

/** The fields owner() reads, as a listed socket has them. */
function sock(protocol: string, family: string, dst: string, dport: number): Socket {
  return { protocol, family, dst, dport } as unknown as Socket;
}

describe("BackendSet", () => {
  test("keeps distinct backends in first-seen order, IPv6 in canonical text, v4-mapped as IPv4", () => {
    const set = new BackendSet(
      [
        { address: "10.0.0.5", port: 53 },
        { address: "FD00:0:0::5", port: 53 },
        { address: "::ffff:10.0.0.5", port: 53 },
        { address: "10.0.0.5", port: 53, protocol: "tcp" },
      ],
      "udp",
    );
    assert.deepEqual(set.backends, [
      { address: "10.0.0.5", port: 53, protocol: "udp" },
      { address: "fd00::5", port: 53, protocol: "udp" },
      { address: "10.0.0.5", port: 53, protocol: "tcp" },
    ]);
  });

  test("one query: the union of protocols, both families for an IPv4 backend, one filter branch per endpoint", () => {
    const set = new BackendSet(
      [
        { address: "10.0.0.5", port: 53 },
        { address: "fd00::5", port: 80, protocol: "tcp" },
      ],
      "udp",
    );
    const q = set.query(undefined, false);
    assert.deepEqual(q.protocols, ["udp", "tcp"]);
    assert.deepEqual(q.families, ["inet", "inet6"]);
    assert.deepEqual(q.filter, {
      or: [
        { dst: "10.0.0.5", dport: 53 },
        { dst: "fd00::5", dport: 80 },
      ],
    });
    assert.ok(q.predicate, "mixed protocols need the per-backend protocol check");
    assert.equal(q.predicate(sock("tcp", "inet", "10.0.0.5", 53)), false, "10.0.0.5:53 is a UDP backend");
    assert.equal(q.predicate(sock("udp", "inet6", "::ffff:10.0.0.5", 53)), true);
    const v6only = new BackendSet([{ address: "fd00::5", port: 53 }], "udp").query(undefined, true);
    assert.deepEqual(v6only.families, ["inet6"]);
    assert.deepEqual(v6only.filter, { dst: "fd00::5", dport: 53 });
    assert.equal(v6only.predicate, undefined, "one protocol: the kernel filter is the whole selection");
    assert.equal(v6only.dryRun, true);
  });

  test("owner: by address, port and protocol; the first listed backend wins an overlap", () => {
    const set = new BackendSet(
      [
        { address: "10.0.0.5", port: 53, protocol: "udp" },
        { address: "10.0.0.5", port: 53, protocol: "any" },
        { address: "fd00::5", port: 53 },
      ],
      "udp",
    );
    assert.equal(set.owner(sock("udp", "inet", "10.0.0.5", 53)), 0);
    assert.equal(set.owner(sock("udp", "inet6", "::ffff:10.0.0.5", 53)), 0);
    assert.equal(set.owner(sock("tcp", "inet", "10.0.0.5", 53)), 1);
    assert.equal(set.owner(sock("udp", "inet6", "fd00::5", 53)), 2);
    assert.equal(set.owner(sock("tcp", "inet6", "fd00::5", 53)), undefined);
    assert.equal(set.owner(sock("udp", "inet", "10.0.0.5", 54)), undefined);
    assert.equal(set.owner(sock("udp", "inet", "10.0.0.6", 53)), undefined);
    assert.equal(set.owner({ family: "unix", protocol: "unix" } as unknown as Socket), undefined);
  });

  test("a bad backend or protocol throws naming it", () => {
    assert.throws(() => new BackendSet([{ address: "10.0.0.5", port: 0 }], "udp"), { name: "AddressError" });
    assert.throws(
      () => new BackendSet([{ address: "10.0.0.5", port: 53, protocol: "sctp" as "udp" }], "udp"),
      { name: "QueryError", message: /sctp/ },
    );
  });
});
