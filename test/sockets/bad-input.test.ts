/**
 * Malformed input through the library: a typed sockdiag error naming the bad part, before anything
 * is sent — never a TypeError, a RangeError or a stack overflow from deep inside. And a destroy
 * whose selection came out empty refuses instead of destroying everything, unless `all: true`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FilterNode } from "../../src/filter/index.js";
import { FilterSyntaxError, MAX_FILTER_DEPTH } from "../../src/filter/index.js";
import { QueryError } from "../../src/options/index.js";
import { destroySocket, destroySockets, iterateSockets, listSockets } from "../../src/sockets/index.js";
import { SockdiagError } from "../../src/sys/errors.js";
import { AddressError, type Backend, BackendTerminator } from "../../src/terminator/index.js";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";
import { socketFromWords } from "../kit/socket-words.js";

/** `fn` throws an error of `type` (a SockdiagError) whose message matches `pattern`. */
function assertTyped(fn: () => unknown, type: new (...args: never[]) => Error, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    assert.ok(err instanceof SockdiagError, "a sockdiag error");
    assert.match(err.message, pattern);
    return true;
  });
}

describe("malformed library input", () => {
  const terminator = new BackendTerminator({ netnsDirs: [], discover: false, dryRun: true });
  const bad: [string, unknown, RegExp][] = [
    ["undefined", undefined, /a backend is an object/],
    ["address 123", { address: 123, port: 53 }, /address must be a string, not a number/],
    [
      "an address object with toString",
      { address: { toString: () => "127.0.0.1" }, port: 53 },
      /address must be a string, not an object/,
    ],
    ['port "53"', { address: "127.0.0.1", port: "53" }, /port must be a number, not the string "53"/],
    ["port 53n", { address: "127.0.0.1", port: 53n }, /port must be a number, not the bigint 53n/],
    ["port NaN", { address: "127.0.0.1", port: Number.NaN }, /port NaN is out of range/],
  ];
  for (const [what, backend, pattern] of bad) {
    test(`terminate(${what}) throws AddressError`, () => {
      assertTyped(() => terminator.terminate(backend as Backend), AddressError, pattern);
    });
  }

  test("terminateMany of something not an array throws QueryError naming backends", () => {
    assertTyped(() => terminator.terminateMany("10.0.0.5:53" as never), QueryError, /backends/);
  });

  const host = (side: string) => ({ type: "host", side }) as unknown as FilterNode;
  const trees: [string, unknown, RegExp][] = [
    ["a missing child", { type: "and", left: host("src") }, /filter\.right: expected a filter node/],
    [
      "an unknown node type",
      { type: "or", left: host("src"), right: { type: "bogus" } },
      /filter\.right\.type: unknown node type "bogus"/,
    ],
    [
      'side "dest"',
      { type: "not", operand: host("dest") },
      /filter\.operand\.side: expected "src" or "dst", got "dest"/,
    ],
    ["a port out of range", { type: "port", side: "dst", op: "eq", port: 70000 }, /filter\.port/],
    [
      "a prefix that is no address",
      { type: "host", side: "dst", prefix: { family: "inet", address: "x", prefixLength: 32 } },
      /prefix\.address/,
    ],
    ["a number", 42, /not number/],
  ];
  for (const [what, filter, pattern] of trees) {
    test(`a filter tree with ${what} throws FilterSyntaxError naming the node`, () => {
      assertTyped(
        () => listSockets({ protocols: ["udp"], filter: filter as FilterNode }),
        FilterSyntaxError,
        pattern,
      );
      assertTyped(
        () => iterateSockets({ protocols: ["udp"], filter: filter as FilterNode }),
        FilterSyntaxError,
        pattern,
      );
    });
  }

  test("a tree nested 10,000 deep is refused without a stack overflow", () => {
    let deep: FilterNode = { type: "host", side: "src" };
    for (let i = 0; i < 10_000; i++) deep = { type: "not", operand: deep };
    assertTyped(
      () => listSockets({ protocols: ["udp"], filter: deep }),
      FilterSyntaxError,
      new RegExp(`at most ${MAX_FILTER_DEPTH}`),
    );
    let nested: Record<string, unknown> = { dport: 53 };
    for (let i = 0; i < 10_000; i++) nested = { not: nested };
    assertTyped(
      () => listSockets({ protocols: ["udp"], filter: nested }),
      FilterSyntaxError,
      /nested deeper/,
    );
  });

  test("netnsDirs given as a string throws QueryError, walking nothing", () => {
    const dirs = "/run/netns" as unknown as string[];
    assertTyped(() => listSockets({ netns: "all", netnsDirs: dirs }), QueryError, /netnsDirs/);
    assertTyped(
      () => destroySockets({ netns: "all", netnsDirs: dirs, filter: "dport = :53" }),
      QueryError,
      /netnsDirs/,
    );
    assertTyped(() => new BackendTerminator({ netnsDirs: dirs }), QueryError, /netnsDirs/);
  });

  test("destroySocket of something that is not a listed socket throws QueryError", () => {
    assertTyped(() => destroySocket(undefined as never), QueryError, /socket/);
    assertTyped(() => destroySocket({ family: "inet", protocol: "udp" } as never), QueryError, /socket/);
  });

  test("destroySocket of a socket or copy whose address is not one of its family's throws QueryError naming it", () => {
    const listed = socketFromWords({
      family: "inet",
      protocol: "udp",
      sport: 5000,
      dport: 53,
      srcWords: [0x7f000001],
      dstWords: [0x7f000002],
      cookie: 7n,
    });
    assertTyped(() => destroySocket({ ...listed, dst: "::1" }), QueryError, /dst "::1": not an IPv4 address/);
    listed.src = "localhost";
    assertTyped(() => destroySocket(listed), QueryError, /src "localhost": not an IPv4 address/);
  });
});

describeAsRoot("a chain of 10,000 conditions", () => {
  let scene: UdpScene;
  before(async () => {
    scene = await startUdpScene("chain");
  });
  after(async () => {
    await scene?.stop();
  });

  test("is balanced, not refused, and means what the range it spells out means", async () => {
    const inRange: HeldSocket[] = [];
    for (const port of [1, 4242, 10_000]) {
      inRange.push(...(await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.1", port } })));
      inRange.push(...(await scene.holder.open({ kind: "listener", bind: { address: "::1", port } })));
    }
    await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.1", port: 10_001 } });
    await scene.clients(2);
    let chain: FilterNode = { type: "port", side: "src", op: "eq", port: 1 };
    for (let i = 2; i <= 10_000; i++)
      chain = { type: "or", left: chain, right: { type: "port", side: "src", op: "eq", port: i } };
    const query = { netns: scene.ns.name, protocols: ["udp", "tcp"], states: ["all"] } as const;
    const cookies = (sockets: { cookie: bigint }[]) => sockets.map((s) => String(s.cookie)).sort();
    const viaChain = cookies(listSockets({ ...query, filter: chain }));
    assert.deepEqual(viaChain, cookies(listSockets({ ...query, filter: "sport >= :1 and sport <= :10000" })));
    assert.deepEqual(viaChain, inRange.map((h) => h.cookie).sort());
  });
});

describeAsRoot("destroySockets refuses to destroy everything", () => {
  let scene: UdpScene;
  before(async () => {
    scene = await startUdpScene("refuse");
  });
  after(async () => {
    await scene?.stop();
  });

  const empty: [string, Record<string, unknown>][] = [
    ["no filter", {}],
    ["{}", { filter: {} }],
    ['""', { filter: "" }],
    ["whitespace", { filter: " \t\n" }],
    ["an object of undefined fields", { filter: { dst: undefined, dport: undefined } }],
    ["no words", { filter: [] }],
  ];
  for (const [what, extra] of empty) {
    test(`${what}, no predicate: QueryError, nothing sent`, async () => {
      const [client] = await scene.clients(1);
      assertTyped(
        () => destroySockets({ netns: scene.ns.name, protocols: ["udp"], ...extra }),
        QueryError,
        /all: true/,
      );
      assert.deepEqual(await scene.holder.poll([client!]), [11], "the client is alive");
      await scene.holder.close([client!]);
    });
  }

  test("all: true destroys every selected socket", async () => {
    const clients = await scene.clients(2);
    const report = destroySockets({
      netns: scene.ns.name,
      protocols: ["udp"],
      states: ["established"],
      all: true,
    });
    assert.equal(report.destroyed, 2);
    await scene.holder.waitFor(clients, "ECONNABORTED");
  });
});
