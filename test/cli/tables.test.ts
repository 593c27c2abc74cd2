/**
 * selectTables against ss's rules (misc/ss.c main, filter_db_parse, filter_merge_defaults): what
 * each flag combination lists, with no kernel involved (the differential tests against ss itself
 * are in ls-families.test.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LS } from "../../src/cli/commands/ls.js";
import { parseCommand } from "../../src/cli/options.js";
import { selectTables } from "../../src/cli/tables.js";
import { UsageError } from "../../src/cli/usage.js";
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
