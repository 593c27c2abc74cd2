/**
 * A caller's callback that throws never stops a termination: a logger throwing after each
 * conntrack deletion (and after each namespace's sockets) is reported in `callbackErrors`, every
 * namespace is visited, and every count balances — against the kernel's conntrack tables of three
 * namespaces pinned in a test-owned directory.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { listConntrack } from "../../src/conntrack/index.js";
import { create, type NetNS } from "../../src/netns/index.js";
import { BackendTerminator, type Logger } from "../../src/terminator/index.js";
import type { TestEntry } from "../ctnl/ct-layout.js";
import { describeAsRoot, insertConntrack } from "../kit/index.js";
import { cleanupScratchLeftovers, type Scratch, scratchDir } from "../netns/helpers.js";

const BACKEND = { address: "10.77.0.5", port: 53 };
const NAMES = ["ns-a", "ns-b", "ns-c"];

/** Three UDP entries DNATed to the backend (reply source = backend), one to another address. */
function table(): TestEntry[] {
  const dnat = (sport: number, replySrc: string): TestEntry => ({
    proto: 17,
    orig: { src: "10.77.1.1", dst: "10.96.0.10", sport, dport: 53 },
    reply: { src: replySrc, dst: "10.77.1.1", sport: 53, dport: sport },
  });
  return [
    dnat(30001, BACKEND.address),
    dnat(30002, BACKEND.address),
    dnat(30003, BACKEND.address),
    dnat(30004, "10.77.0.6"),
  ];
}

describeAsRoot("a throwing logger during a termination", () => {
  let scratch: Scratch;
  const handles: NetNS[] = [];
  before(() => {
    cleanupScratchLeftovers();
    scratch = scratchDir();
    for (const name of NAMES) {
      const ns = create({ loopbackUp: true });
      handles.push(ns);
      insertConntrack(scratch.pin(name, ns), table());
    }
  });
  after(() => {
    scratch?.dispose();
    for (const ns of handles) ns.close();
  });

  const count = (name: string) => listConntrack({ netns: `${scratch.dir}/${name}` }).length;

  test("is reported, every namespace is visited and the report balances", () => {
    assert.deepEqual(NAMES.map(count), [4, 4, 4]);
    const logged: string[] = [];
    const logger: Logger = {
      info(message, fields) {
        logged.push(`${message} ${String(fields?.netns)}`);
        throw new Error(`logger broke on ${message}`);
      },
      warn(message, fields) {
        logged.push(`warn ${message} ${String(fields?.netns)}`);
        throw new Error(`logger broke on ${message}`);
      },
    };
    const report = new BackendTerminator({ netnsDirs: [scratch.dir], discover: false, logger }).terminate(
      BACKEND,
    );

    assert.deepEqual(
      report.namespaces.map((n) => n.netns),
      ["(host)", ...NAMES],
      "every namespace visited",
    );
    for (const n of report.namespaces.slice(1)) {
      assert.equal(n.conntrackError, undefined, n.netns);
      assert.deepEqual([n.conntrack?.matched, n.conntrack?.deleted], [3, 3], n.netns);
    }
    const ct = report.conntrack!;
    assert.deepEqual([ct.matched, ct.deleted, ct.gone, ct.failed.length, ct.skipped], [9, 9, 0, 0, 0]);
    const summed = report.namespaces.reduce((sum, n) => sum + (n.conntrack?.matched ?? 0), 0);
    assert.equal(summed, ct.matched, "the namespaces' counts sum to the total");
    assert.deepEqual(
      logged.filter((l) => l.startsWith("deleted conntrack entries")),
      NAMES.map((name) => `deleted conntrack entries ${name}`),
    );
    assert.equal(report.callbackErrors.length, logged.length);
    assert.ok(report.callbackErrors.every((e) => /logger broke/.test(e.message)));
    assert.deepEqual(NAMES.map(count), [1, 1, 1], "the backend's entries deleted, the other kept");
  });
});
