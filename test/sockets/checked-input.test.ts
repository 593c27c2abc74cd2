/**
 * Options checked whole, against the real kernel: a typo in a key, a string where a boolean goes, a
 * selection of wildcards only, or a malformed argument is a typed error naming the field — and the
 * sockets of the namespace are counted before and after, so that "destroyed nothing" is measured.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { QueryError } from "../../src/options/index.js";
import * as promises from "../../src/promises/index.js";
import { type DestroyQuery, destroySockets, iterateSockets, listSockets } from "../../src/sockets/index.js";
import { SockdiagError } from "../../src/sys/errors.js";
import { BackendTerminator, terminateUDPConnectionsToBackend } from "../../src/terminator/index.js";
import { describeAsRoot, startUdpScene, type UdpScene } from "../kit/index.js";

/** `fn` throws a QueryError about `field` whose message matches `pattern`. */
function assertQueryError(fn: () => unknown, field: string, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof QueryError, `expected QueryError, got ${String(err)}`);
    assert.equal(err.field, field);
    assert.match(err.message, pattern);
    return true;
  });
}

describeAsRoot("destroy options checked whole", () => {
  let scene: UdpScene;
  let netns: string;
  /** Every socket of the namespace, TCP and UDP, in every state. */
  const count = () => listSockets({ netns, protocols: ["tcp", "udp"], states: ["all"] }).length;
  before(async () => {
    scene = await startUdpScene("checked");
    netns = scene.ns.name;
    await scene.clients(4);
    await scene.holder.open({ kind: "listener", bind: { address: "127.0.0.1" } }, 2);
  });
  after(async () => {
    await scene?.stop();
  });

  /** `fn` throws a QueryError about `field`, and every socket is still there. */
  function refuses(fn: () => unknown, field: string, pattern: RegExp): void {
    const before = count();
    assert.ok(before >= 7, `the scene holds sockets (${before})`);
    assertQueryError(fn, field, pattern);
    assert.equal(count(), before, "nothing destroyed");
  }

  test("an unknown key is a QueryError naming it and the nearest known key", () => {
    const typo = { protocol: "tcp", netns, filter: "dst 127.0.0.1" } as unknown as DestroyQuery;
    refuses(() => destroySockets(typo), "protocol", /unknown option; did you mean "protocols"\?/);
    refuses(
      () => destroySockets({ netns, filter: "dst 127.0.0.1", dryrun: true } as never),
      "dryrun",
      /"dryRun"/,
    );
    assertQueryError(() => listSockets({ netns, protocol: ["udp"] } as never), "protocol", /"protocols"/);
    assertQueryError(() => iterateSockets({ netns, filtre: "dport = :53" } as never), "filtre", /"filter"/);
    assertQueryError(
      () => new BackendTerminator({ netnsdirs: [] } as never),
      "config.netnsdirs",
      /did you mean "netnsDirs"/,
    );
    const terminator = new BackendTerminator({ netns: "all", netnsDirs: [], discover: false, dryRun: true });
    assertQueryError(
      () => terminator.terminate({ address: "127.0.0.1", port: 53, protcol: "tcp" } as never),
      "backend.protcol",
      /"protocol"/,
    );
    assertQueryError(
      () => terminator.terminate({ address: "127.0.0.1", port: 53 }, { signl: 1 } as never),
      "options.signl",
      /"signal"/,
    );
    assertQueryError(
      () => terminateUDPConnectionsToBackend("127.0.0.1:53", { netnsDirs: [], dryrun: true } as never),
      "options.dryrun",
      /"dryRun"/,
    );
  });

  test("sockdiag/promises refuses the same way, with the same class and code", async () => {
    const before = count();
    const typo = { protocol: "tcp", netns, filter: "dst 127.0.0.1" } as never;
    await assert.rejects(promises.destroySockets(typo), (err: unknown) => {
      assert.ok(err instanceof QueryError, String(err));
      assert.equal(err.code, "ERR_SOCKDIAG_QUERY");
      assert.equal(err.field, "protocol");
      assert.match(err.message, /"protocols"/);
      return true;
    });
    await assert.rejects(promises.destroySockets(undefined as never), QueryError);
    await assert.rejects(promises.listSockets({ netns, protocol: ["udp"] } as never), QueryError);
    assertQueryError(
      () => new promises.BackendTerminator({ netnsdirs: [] } as never),
      "config.netnsdirs",
      /"netnsDirs"/,
    );
    const terminator = new promises.BackendTerminator({
      netns: "all",
      netnsDirs: [],
      discover: false,
      dryRun: true,
    });
    await assert.rejects(
      terminator.terminate({ address: "127.0.0.1", port: 53, protcol: "tcp" } as never),
      (err: unknown) => err instanceof QueryError && err.field === "backend.protcol",
    );
    assert.equal(count(), before, "nothing destroyed");
  });

  test("booleans are booleans", () => {
    for (const all of ["false", [], 0, "true"])
      refuses(
        () => destroySockets({ netns, protocols: ["udp"], all } as never),
        "all",
        /expected true or false/,
      );
    refuses(
      () => destroySockets({ netns, filter: "dst 127.0.0.1", dryRun: "yes" } as never),
      "dryRun",
      /expected true or false/,
    );
    assertQueryError(
      () => listSockets({ netns, kernelFilter: "no" } as never),
      "kernelFilter",
      /true or false/,
    );
    assertQueryError(
      () => new BackendTerminator({ discover: "false" } as never),
      "discover",
      /true or false/,
    );
  });

  const wildcards: [string, DestroyQuery["filter"]][] = [
    ["{ dst: '*' }", { dst: "*" }],
    ["dport = :*", "dport = :*"],
    ["dst 0.0.0.0/0", "dst 0.0.0.0/0"],
    ["dst ::/0", "dst ::/0"],
    ["src *:*", "src *:*"],
    ["sport >= :0", "sport >= :0"],
    ["fwmark 0/0", "fwmark 0/0"],
    ["an or holding a wildcard", "dport = :53 or dst *"],
    ["{ or: [...] } holding one", { or: [{ dport: 53 }, { src: "*" }] }],
    ["wildcards joined with and", "dst * and dport = :*"],
    ["not not *", "not not dst *"],
  ];
  for (const [what, filter] of wildcards) {
    test(`a filter of wildcards only (${what}) is refused like an empty one`, () => {
      refuses(() => destroySockets({ netns, protocols: ["udp", "tcp"], filter }), "filter", /all: true/);
    });
  }

  test("a narrowing condition beside a wildcard is a selection", () => {
    const report = destroySockets({
      netns,
      protocols: ["udp"],
      filter: "dst * and dport = :1",
      dryRun: true,
    });
    assert.equal(report.matched, 0);
  });

  test("malformed calls are a SockdiagError naming the field", () => {
    const before = count();
    const field = (fn: () => unknown, name: string) =>
      assert.throws(fn, (err: unknown) => {
        assert.ok(err instanceof SockdiagError && !(err instanceof TypeError), String(err));
        assert.equal((err as QueryError).field, name);
        return true;
      });
    field(() => destroySockets(undefined as never), "query");
    field(() => destroySockets(null as never), "query");
    field(() => destroySockets({ netns: 0, filter: "dst 127.0.0.1" } as never), "netns");
    field(() => destroySockets({ netns: {}, filter: "dst 127.0.0.1" } as never), "netns");
    field(() => listSockets({ netns: 0 } as never), "netns");
    field(() => listSockets(null as never), "query");
    assert.equal(count(), before, "nothing destroyed");
  });
});
