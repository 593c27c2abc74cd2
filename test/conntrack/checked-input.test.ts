/**
 * deleteConntrack's input checked whole, against the real kernel: unknown keys, strings for
 * booleans, malformed arguments, a mark under a mask as conntrack-tools means it (and a zero mask
 * as no selection), a predicate that throws — each counted before and after: nothing is deleted.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type DeleteConntrackQuery, deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { QueryError } from "../../src/options/index.js";
import * as promises from "../../src/promises/index.js";
import { EmptySelectionError, PredicateError } from "../../src/run/index.js";
import { SockdiagError } from "../../src/sys/errors.js";
import type { TestEntry } from "../ctnl/ct-layout.js";
import {
  cleanupLeftovers,
  conntrackKeys,
  conntrackTool,
  createNetns,
  describeAsRoot,
  entryKeys,
  insertConntrack,
  type ScratchNetns,
} from "../kit/index.js";

/** 20 UDP entries whose marks are 0 to 19. */
function markedTable(): TestEntry[] {
  return Array.from({ length: 20 }, (_, i) => ({
    proto: 17,
    orig: { src: "10.64.1.1", dst: "10.64.2.2", sport: 20000 + i, dport: 53 },
    mark: i,
  }));
}

describeAsRoot("deleteConntrack input checked whole", () => {
  let ns: ScratchNetns;
  const count = () => listConntrack({ netns: ns.name }).length;
  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("ctcheck");
    insertConntrack(ns.path, markedTable());
  });
  after(async () => {
    await ns?.remove();
  });

  /** `fn` throws an error of `type` about `field`, and all 20 entries are still there. */
  function refuses(fn: () => unknown, type: abstract new (...args: never[]) => Error, field?: string): void {
    assert.equal(count(), 20);
    assert.throws(fn, (err: unknown) => {
      assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
      assert.ok(err instanceof SockdiagError);
      if (field !== undefined) assert.equal((err as QueryError).field, field);
      return true;
    });
    assert.equal(count(), 20, "nothing deleted");
  }

  test("an unknown key is a QueryError naming it and the nearest known key", async () => {
    const typo = { netns: ns.name, all: true, protcol: "tcp" } as unknown as DeleteConntrackQuery;
    refuses(() => deleteConntrack(typo), QueryError, "protcol");
    assert.throws(() => deleteConntrack(typo), /did you mean "protocol"\?/);
    refuses(
      () => deleteConntrack({ netns: ns.name, original: { source: "10.64.1.1" } } as never),
      QueryError,
      "original.source",
    );
    refuses(() => listConntrack({ netns: ns.name, markmask: 1 } as never), QueryError, "markmask");
    refuses(
      () => deleteConntrack({ netns: ns.name, anyOf: [{ mark: 1, zones: 0 }] } as never),
      QueryError,
      "anyOf[0].zones",
    );
    await assert.rejects(promises.deleteConntrack(typo as never), (err: unknown) => {
      assert.ok(err instanceof QueryError, String(err));
      assert.equal(err.code, "ERR_SOCKDIAG_QUERY");
      assert.equal(err.field, "protcol");
      return true;
    });
    await assert.rejects(promises.deleteConntrack(undefined as never), QueryError);
    assert.equal(count(), 20);
  });

  test("booleans are booleans", () => {
    for (const all of ["false", [], 1])
      refuses(() => deleteConntrack({ netns: ns.name, all } as never), QueryError, "all");
    refuses(() => deleteConntrack({ netns: ns.name, mark: 1, dryRun: "no" } as never), QueryError, "dryRun");
    refuses(
      () => listConntrack({ netns: ns.name, kernelFilter: "off" } as never),
      QueryError,
      "kernelFilter",
    );
  });

  test("malformed calls are a SockdiagError naming the field", () => {
    refuses(() => deleteConntrack(undefined as never), QueryError, "query");
    refuses(() => deleteConntrack({ netns: 0, mark: 1 } as never), QueryError, "netns");
    refuses(() => deleteConntrack({ netns: {}, mark: 1 } as never), QueryError, "netns");
    refuses(() => deleteConntrack({ netns: ns.name, anyOf: "x" } as never), QueryError, "anyOf");
    refuses(() => deleteConntrack({ netns: ns.name, anyOf: [null] } as never), QueryError, "anyOf[0]");
    refuses(() => deleteConntrack({ netns: ns.name, protocol: {} } as never), SockdiagError, "protocol");
    refuses(() => listConntrack({ netns: ns.name, reply: null } as never), QueryError, "reply");
  });

  test("MARK/MASK as conntrack-tools means it: the mark is not masked", async () => {
    for (const [mark, mask] of [
      [17, 0x10],
      [16, 0x10],
      [3, 0xff],
    ] as const) {
      const text = `${mark}/0x${mask.toString(16)}`;
      const oracle = conntrackKeys((await conntrackTool(ns.name, ["-L", "-m", text])).stdout);
      const ours = listConntrack({ netns: ns.name, mark, markMask: mask });
      assert.deepEqual(entryKeys(ours), oracle, `listed as conntrack -L -m ${text}`);
      assert.deepEqual(
        entryKeys(listConntrack({ netns: ns.name, mark, markMask: mask, kernelFilter: false })),
        oracle,
        "the same without the kernel's filter",
      );
    }
    assert.equal(listConntrack({ netns: ns.name, mark: 16, markMask: 0x10 }).length, 4);
    const report = deleteConntrack({ netns: ns.name, mark: 17, markMask: 0x10 });
    assert.equal(report.matched, 0, "17/0x10 selects no entry: 17 has a bit outside the mask");
    assert.equal(count(), 20, "nothing deleted");
    await conntrackTool(ns.name, ["-D", "-m", "17/0x10"]);
    assert.equal(count(), 20, "conntrack -D -m 17/0x10 deletes none either");
  });

  test("a zero mask selects every entry with mark 0: refused as no selection; with another mark, none", () => {
    refuses(() => deleteConntrack({ netns: ns.name, mark: 0, markMask: 0 }), EmptySelectionError);
    refuses(() => deleteConntrack({ netns: ns.name, markMask: 0 }), QueryError, "markMask");
    const none = deleteConntrack({ netns: ns.name, mark: 5, markMask: 0 });
    assert.equal(none.matched, 0, "(mark & 0) is never 5");
    assert.equal(count(), 20, "nothing deleted");
    refuses(
      () => deleteConntrack({ netns: ns.name, anyOf: [{ mark: 1 }, { mark: 0, markMask: 0 }] }),
      EmptySelectionError,
    );
  });

  test("a predicate that throws ends the run with PredicateError and a balanced report", () => {
    const boom = new Error("boom");
    let calls = 0;
    refuses(
      () =>
        deleteConntrack({
          netns: ns.name,
          all: true,
          predicate: () => {
            if (++calls === 3) throw boom;
            return true;
          },
        }),
      PredicateError,
    );
    calls = 0;
    assert.throws(
      () =>
        deleteConntrack({
          netns: ns.name,
          all: true,
          predicate: () => {
            if (++calls === 3) throw boom;
            return true;
          },
        }),
      (err: unknown) => {
        assert.ok(err instanceof PredicateError, String(err));
        assert.equal(err.cause, boom);
        assert.match(err.message, /the delete predicate threw: boom/);
        const r = err.report as ReturnType<typeof deleteConntrack>;
        // Both approved entries were still queued: nothing is sent after the exception.
        assert.deepEqual([r.matched, r.deleted, r.gone, r.failed.length, r.skipped], [2, 0, 0, 0, 2]);
        assert.deepEqual(
          r.namespaces.map((n) => [n.netns, n.matched, n.skipped]),
          [[ns.name, 2, 2]],
        );
        return true;
      },
    );
    assert.equal(count(), 20);
  });

  test("a predicate answering anything but true or false ends the run as one that threw: nothing deleted", () => {
    for (const answer of [Promise.resolve(false), "false", 1n, {}, 1]) {
      refuses(
        () => deleteConntrack({ netns: ns.name, all: true, predicate: () => answer as boolean }),
        PredicateError,
      );
      assert.throws(
        () => deleteConntrack({ netns: ns.name, all: true, predicate: () => answer as boolean }),
        (err: unknown) => {
          assert.ok(err instanceof PredicateError, String(err));
          assert.ok(err.cause instanceof QueryError);
          assert.match(err.message, /the delete predicate answered .*, not true or false/);
          const r = err.report as ReturnType<typeof deleteConntrack>;
          assert.deepEqual([r.matched, r.deleted, r.gone, r.failed.length, r.skipped], [0, 0, 0, 0, 0]);
          return true;
        },
      );
    }
    assert.equal(count(), 20);
  });
});
