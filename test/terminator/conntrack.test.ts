/**
 * The conntrack step of BackendTerminator with injected collaborators (no root, no kernel): which
 * selections it asks for (reply source = each UDP backend, IPv4 also as ::ffff: in IPv6 entries,
 * one call per namespace for every backend), how each entry is counted for its backend, failures
 * and notes per namespace, conntrack: false, and ok.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { ConntrackUnavailableError } from "../../src/conntrack/errors.js";
import type {
  ConntrackDeleteReport,
  ConntrackEntry,
  DeleteConntrackQuery,
} from "../../src/conntrack/index.js";
import { type DestroyQuery, emptyReport } from "../../src/sockets/index.js";
import { ForeignError } from "../../src/sys/errors.js";
import { BackendTerminator, type ConntrackDeleter } from "../../src/terminator/index.js";
import { hostOnly } from "./seam.js";

const noSockets = (q: DestroyQuery) => ({ ...emptyReport(Boolean(q.dryRun)), failures: [] });

function report(over: Partial<ConntrackDeleteReport> = {}): ConntrackDeleteReport {
  return {
    matched: 0,
    deleted: 0,
    wouldDelete: 0,
    gone: 0,
    failed: [],
    skipped: 0,
    dryRun: false,
    namespaces: [],
    failures: [],
    notes: [],
    callbackErrors: [],
    ...over,
  };
}

function entryTo(src: string, sport: number): ConntrackEntry {
  const v6 = src.includes(":");
  return {
    family: v6 ? "inet6" : "inet",
    protocol: "udp",
    protocolNumber: 17,
    original: {
      src: v6 ? "fd00::1" : "10.0.0.1",
      dst: v6 ? "fd00::100" : "10.96.0.1",
      sport: 4000,
      dport: 53,
    },
    reply: { src, dst: v6 ? "fd00::1" : "10.0.0.1", sport, dport: 4000 },
    status: 0,
    flags: [],
    timeout: 30,
    mark: 0,
    zone: 0,
    id: 1,
    use: 1,
  };
}

/** A deleter that records its queries and tells the given outcomes. */
function recording(
  outcomes: [ConntrackEntry, "deleted" | "gone"][],
  over: Partial<ConntrackDeleteReport> = {},
) {
  const queries: DeleteConntrackQuery[] = [];
  const deleter: ConntrackDeleter = (q) => {
    queries.push(q);
    for (const [e, o] of outcomes) q.onOutcome?.(e, o);
    const deleted = outcomes.filter(([, o]) => o === "deleted").length;
    return report({ matched: outcomes.length, deleted, gone: outcomes.length - deleted, ...over });
  };
  return { queries, deleter };
}

test("one conntrack call per namespace for every UDP backend, counted per backend and in total", () => {
  const { queries, deleter } = recording([
    [entryTo("10.0.0.5", 53), "deleted"],
    [entryTo("::ffff:10.0.0.5", 53), "deleted"],
    [entryTo("fd00::7", 5353), "gone"],
  ]);
  const t = new BackendTerminator({}, { targets: hostOnly, destroy: noSockets, deleteConntrack: deleter });
  const r = t.terminateMany([
    { address: "10.0.0.5", port: 53 },
    { address: "10.0.0.6", port: 80, protocol: "tcp" },
    { address: "fd00:0::7", port: 5353 },
  ]);
  assert.equal(queries.length, 1);
  assert.equal(queries[0]!.protocol, "udp");
  assert.deepEqual(queries[0]!.anyOf, [
    { family: "inet", reply: { src: "10.0.0.5", sport: 53 } },
    { family: "inet6", reply: { src: "::ffff:10.0.0.5", sport: 53 } },
    { family: "inet6", reply: { src: "fd00::7", sport: 5353 } },
  ]);
  assert.equal(queries[0]!.netns, undefined, "the host is the caller's own namespace");
  assert.deepEqual(r.conntrack, { matched: 3, deleted: 2, wouldDelete: 0, gone: 1, failed: [], skipped: 0 });
  assert.deepEqual(r.namespaces[0]!.conntrack, r.conntrack);
  assert.deepEqual(
    r.backends.map((b) => b.conntrack),
    [
      { matched: 2, deleted: 2, wouldDelete: 0, gone: 0, failed: [], skipped: 0 },
      undefined,
      { matched: 1, deleted: 0, wouldDelete: 0, gone: 1, failed: [], skipped: 0 },
    ],
  );
  assert.equal(r.ok, true);
});

test("conntrackPredicate is the conntrack query's predicate: the deleter applies it per entry", () => {
  const { queries, deleter } = recording([]);
  const veto = (e: ConntrackEntry) => e.original.src !== "10.0.0.1";
  new BackendTerminator(
    { conntrackPredicate: veto },
    { targets: hostOnly, destroy: noSockets, deleteConntrack: deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(queries[0]!.predicate, veto);
  const none = recording([]);
  new BackendTerminator(
    {},
    { targets: hostOnly, destroy: noSockets, deleteConntrack: none.deleter },
  ).terminate({
    address: "10.0.0.5",
    port: 53,
  });
  assert.equal(none.queries[0]!.predicate, undefined);
});

test("conntrack: false, or TCP backends only: no conntrack call and no conntrack report", () => {
  for (const [config, backend] of [
    [{ conntrack: false }, { address: "10.0.0.5", port: 53 }],
    [{}, { address: "10.0.0.5", port: 53, protocol: "tcp" as const }],
  ] as const) {
    const { queries, deleter } = recording([]);
    const r = new BackendTerminator(
      { ...config },
      { targets: hostOnly, destroy: noSockets, deleteConntrack: deleter },
    ).terminate(backend);
    assert.equal(queries.length, 0);
    assert.equal(r.conntrack, undefined);
    assert.equal(r.namespaces[0]!.conntrack, undefined);
  }
});

test("a conntrack failure is the namespace's conntrackError and makes the run not ok; a note does not", () => {
  const failing = recording([], {
    failures: [{ netns: "(host)", error: new ForeignError(new Error("kernel said no")) }],
  });
  const r = new BackendTerminator(
    {},
    { targets: hostOnly, destroy: noSockets, deleteConntrack: failing.deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(r.namespaces[0]!.conntrackError?.message, "kernel said no");
  assert.equal(r.namespaces[0]!.conntrackError?.code, "ERR_SOCKDIAG_FOREIGN");
  assert.equal(r.ok, false);

  const thrown: ConntrackDeleter = () => {
    throw new Error("cannot open");
  };
  const r2 = new BackendTerminator(
    {},
    { targets: hostOnly, destroy: noSockets, deleteConntrack: thrown },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(r2.namespaces[0]!.conntrackError?.message, "cannot open");
  assert.deepEqual(r2.conntrack, { matched: 0, deleted: 0, wouldDelete: 0, gone: 0, failed: [], skipped: 0 });
  assert.equal(r2.ok, false);

  const noted = recording([], {
    notes: [
      {
        netns: "(host)",
        skipped: "no-conntrack",
        message: new ConntrackUnavailableError("(host)", new Error("EOPNOTSUPP")).message,
      },
    ],
  });
  const r3 = new BackendTerminator(
    {},
    { targets: hostOnly, destroy: noSockets, deleteConntrack: noted.deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(r3.namespaces[0]!.conntrackNote?.skipped, "no-conntrack");
  assert.match(r3.namespaces[0]!.conntrackNote?.message ?? "", /no conntrack/);
  assert.equal(r3.ok, true);

  const failedEntries = recording([], {
    matched: 1,
    failed: [{ entry: entryTo("10.0.0.5", 53), errno: 1, code: "EPERM", message: "x" }],
  });
  const r4 = new BackendTerminator(
    {},
    { targets: hostOnly, destroy: noSockets, deleteConntrack: failedEntries.deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(r4.conntrack?.failed.length, 1);
  assert.equal(r4.ok, false);
});

test("a dry run asks for a dry run", () => {
  const { queries, deleter } = recording([]);
  new BackendTerminator(
    { dryRun: true },
    { targets: hostOnly, destroy: noSockets, deleteConntrack: deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.equal(queries[0]!.dryRun, true);
});

test("the conntrack log line gives a dry run's would-count, and a failure's warning the counts so far", () => {
  const logged: [string, Record<string, unknown> | undefined][] = [];
  const logger = {
    info: (m: string, f?: Record<string, unknown>) => logged.push([m, f]),
    warn: (m: string, f?: Record<string, unknown>) => logged.push([m, f]),
  };
  const entry = entryTo("10.0.0.5", 53);
  const dry = recording([], { matched: 2, wouldDelete: 2, dryRun: true });
  new BackendTerminator(
    { dryRun: true, logger },
    { targets: hostOnly, destroy: noSockets, deleteConntrack: dry.deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.deepEqual(logged, [
    ["deleted conntrack entries", { netns: "(host)", matched: 2, wouldDelete: 2, failed: 0 }],
  ]);

  logged.length = 0;
  const broke = recording([], {
    matched: 3,
    deleted: 1,
    failed: [{ entry, errno: 1, code: "EPERM", message: "x" }],
    failures: [{ netns: "(host)", error: new ForeignError(new Error("dump broke")) }],
  });
  new BackendTerminator(
    { logger },
    { targets: hostOnly, destroy: noSockets, deleteConntrack: broke.deleter },
  ).terminate({ address: "10.0.0.5", port: 53 });
  assert.deepEqual(logged, [
    ["conntrack failed", { netns: "(host)", error: "dump broke", matched: 3, deleted: 1, failed: 1 }],
  ]);
});
