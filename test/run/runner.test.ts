/**
 * The one runner behind destroySockets and deleteConntrack, seen from its two callers: one guard
 * (the same EmptySelectionError, before anything is opened; a predicate is a selection for both),
 * one option shape for where a call runs (the terminator's too), and one report shape — per
 * namespace, failures { netns, error }, notes { netns, skipped, message }.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { deleteConntrack } from "../../src/conntrack/index.js";
import { NetnsNotFoundError } from "../../src/netns/index.js";
import { QueryError } from "../../src/options/index.js";
import { EmptySelectionError } from "../../src/run/index.js";
import { destroySockets } from "../../src/sockets/index.js";
import { BackendTerminator } from "../../src/terminator/index.js";
import { describeAsRoot } from "../kit/index.js";

// A namespace that does not exist: a call that gets past its guard fails opening it.
const nowhere = "sdt-run-no-such-namespace";

describe("one guard for destroys and deletes", () => {
  const empty: [string, () => unknown][] = [
    ["destroySockets without a filter", () => destroySockets({ netns: nowhere })],
    ["destroySockets with wildcards only", () => destroySockets({ netns: nowhere, filter: "dport = :*" })],
    ["deleteConntrack without a selection", () => deleteConntrack({ netns: nowhere })],
    [
      "deleteConntrack with a zero mark mask",
      () => deleteConntrack({ netns: nowhere, mark: 0, markMask: 0 }),
    ],
  ];
  for (const [name, call] of empty)
    test(`${name}: EmptySelectionError, a QueryError, before the namespace is opened`, () => {
      assert.throws(
        call,
        (err: unknown) =>
          err instanceof EmptySelectionError &&
          err instanceof QueryError &&
          err.code === "ERR_SOCKDIAG_EMPTY_SELECTION",
      );
    });

  test("a predicate is a selection for both: the call goes on to open the namespace", () => {
    assert.throws(() => destroySockets({ netns: nowhere, predicate: () => false }), NetnsNotFoundError);
    assert.throws(() => deleteConntrack({ netns: nowhere, predicate: () => false }), NetnsNotFoundError);
  });
});

describe("one namespace selection", () => {
  test("the terminator takes the selection of every call; its old flags are unknown keys", () => {
    for (const key of ["hostOnly", "includeHost", "namespaces", "destroy", "deleteConntrack"])
      assert.throws(
        () => new BackendTerminator({ [key]: true } as never),
        (err: unknown) => err instanceof QueryError && err.field === `config.${key}`,
        key,
      );
  });

  test("discover is a boolean wherever a selection is taken", () => {
    const checks: [string, () => unknown][] = [
      ["destroySockets", () => destroySockets({ netns: "all", discover: "no" as never, all: true })],
      ["deleteConntrack", () => deleteConntrack({ netns: "all", discover: 1 as never, all: true })],
      ["BackendTerminator", () => new BackendTerminator({ discover: "yes" as never })],
    ];
    for (const [name, call] of checks)
      assert.throws(call, (err: unknown) => err instanceof QueryError && err.field === "discover", name);
  });
});

describeAsRoot("one report shape", () => {
  test("a dry run of each reports per namespace, with failures and notes apart", () => {
    const sockets = destroySockets({ protocols: ["udp"], filter: "dst 127.0.0.1:9", dryRun: true });
    const entries = deleteConntrack({ protocol: "udp", reply: { src: "127.0.0.1", sport: 9 }, dryRun: true });
    for (const report of [sockets, entries]) {
      assert.deepEqual(
        report.namespaces.map((n) => [n.netns, n.matched, n.dryRun]),
        [["(host)", report.matched, true]],
      );
      assert.deepEqual(report.failures, []);
      assert.ok(Array.isArray(report.notes));
    }
  });
});
