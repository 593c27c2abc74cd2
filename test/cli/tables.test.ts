/**
 * selectTables against ss's rules (misc/ss.c main, filter_db_parse, filter_merge_defaults): what
 * each flag combination lists, with no kernel involved (the differential tests against ss itself
 * are in ls-families.test.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LS } from "../../src/cli/commands/ls.js";
import { parseCommand, UsageError } from "../../src/cli/io/index.js";
import { selectionFromArgs, selectTables } from "../../src/cli/select/index.js";
import { ALL_STATES, DEFAULT_STATES } from "../../src/diag/states.js";

const CLOSE = 1 << 7;
const ESTAB = 1 << 1;

function select(...argv: string[]) {
  const p = parseCommand(LS, argv);
  const values = {
    query: p.values.query as string[] | undefined,
    family: p.values.family as string[] | undefined,
  };
  const t = selectTables(p.order, values, ["all"], (s) => s);
  return { ...t, protocols: [...t.protocols].sort(), named: [...t.named].sort() };
}

describe("selectTables", () => {
  test("no flag is ss -A all, connected sockets only", () => {
    const t = select();
    assert.deepEqual(t.protocols, [
      "mptcp",
      "netlink",
      "packet",
      "raw",
      "sctp",
      "tcp",
      "udp",
      "unix",
      "vsock",
      "xdp",
    ]);
    assert.equal(t.states, DEFAULT_STATES);
    assert.deepEqual(t.named, []);
  });

  test("each table and family brings its default states; -A means connected unless -a", () => {
    assert.equal(select("-0").states, CLOSE);
    assert.equal(select("-u").states, ESTAB);
    assert.equal(select("-u", "-0").states, ESTAB | CLOSE);
    assert.equal(select("-A", "packet").states, DEFAULT_STATES);
    assert.equal(select("-A", "packet", "-a").states, ALL_STATES);
    assert.equal(select("-a", "-A", "packet").states, ALL_STATES);
  });

  test("a table brings its family, a family its tables; the first -A drops the tables before it", () => {
    assert.deepEqual(select("-4", "-x").protocols, ["mptcp", "raw", "sctp", "tcp", "udp", "unix"]);
    assert.deepEqual(select("-4", "-x").families, ["inet"]);
    assert.deepEqual(select("-t", "-A", "udp").protocols, ["udp"]);
    assert.deepEqual(select("-A", "udp", "-t").protocols, ["tcp", "udp"]);
    assert.deepEqual(select("-A", "tcp", "-f", "netlink").protocols, ["netlink", "tcp"]);
    assert.deepEqual(select("-f", "link").protocols, ["packet"]);
    assert.deepEqual(select("-A", "all,!netlink,!packet").protocols.includes("netlink"), false);
  });

  test("single tables of a family are types; groups are not named", () => {
    const t = select("-A", "unix_dgram,p_raw");
    assert.deepEqual(t.protocols, ["packet", "unix"]);
    assert.deepEqual([t.unixTypes, t.packetTypes], [["dgram"], ["raw"]]);
    assert.deepEqual(t.named, ["packet", "unix"]);
    assert.deepEqual(select("-A", "inet").named, []);
    assert.deepEqual(select("-f", "inet6").named, []);
    assert.deepEqual(select("--vsock").named, ["vsock"]);
  });

  test("vsock_stream and vsock_dgram are types of one dump; ss keeps seqpacket sockets with either", () => {
    const stream = select("-A", "vsock_stream");
    assert.deepEqual(
      [stream.protocols, stream.vsockTypes, stream.named],
      [["vsock"], ["stream", "seqpacket"], ["vsock"]],
    );
    assert.deepEqual(select("-A", "v_dgr").vsockTypes, ["dgram", "seqpacket"]);
    assert.equal(select("--vsock").vsockTypes, undefined);
    assert.equal(select("-A", "vsock").vsockTypes, undefined);
    assert.deepEqual([select("--xdp").protocols, select("--xdp").states], [["xdp"], CLOSE]);
    assert.deepEqual(select("--tipc").states, ESTAB | (1 << 10) | CLOSE);
  });

  test("unknown names, dccp, and nothing left are usage errors", () => {
    assert.throws(
      () => select("-A", "unix_dgrm"),
      /"unix_dgrm" is not a socket table; did you mean "unix_dgram"\?/,
    );
    assert.throws(() => select("-f", "inet7"), UsageError);
    assert.throws(() => select("-A", "dccp"), /DCCP/);
    assert.throws(() => select("-A", "!tcp"), /no socket table left/);
  });
});

describe("--socket=QUERY", () => {
  const query = (...argv: string[]) => selectionFromArgs(parseCommand(LS, argv), { tables: ["all"] }).query;

  test("is -A/--query under ss's other name, in either spelling, interleaved in the order given", () => {
    for (const [a, b] of [
      [
        ["-A", "tcp,udp"],
        ["--socket", "tcp,udp"],
      ],
      [
        ["-A", "unix_dgram", "-a"],
        ["--socket=unix_dgram", "-a"],
      ],
      [
        ["--query", "packet_raw"],
        ["--socket", "p_raw"],
      ],
      [
        ["-A", "tcp", "-A", "!tcp,udp", "-A", "raw"],
        ["-A", "tcp", "--socket", "!tcp,udp", "-A", "raw"],
      ],
      [
        ["-A", "vsock_stream"],
        ["--socket", "v_str"],
      ],
    ] as const)
      assert.deepEqual(query(...b), query(...a), b.join(" "));
    assert.deepEqual(query("-A", "tcp", "--socket", "!tcp,udp").protocols, ["udp"]);
    assert.deepEqual([...(query("--socket", "!tcp,udp", "-A", "tcp").protocols ?? [])].sort(), [
      "tcp",
      "udp",
    ]);
  });

  test("an unknown table in --socket is the same usage error as in -A", () => {
    assert.throws(() => query("--socket", "tcp,udpp"), /"udpp" is not a socket table; did you mean "udp"\?/);
  });
});
