/**
 * The compiled filter against the real kernel, in the filter scene (differential-scene.ts): every
 * program the compiler makes — for the whole corpus, and for a few hundred random trees — is
 * accepted (no EINVAL), and the kernel program alone, the JS predicate alone and both together
 * select the same sockets. With `autobound` the predicate alone can only test the port range (sock_diag
 * does not report whether the program bound the port), so there it selects a superset, as
 * src/filter/compile.ts (compilePredicate) documents; the kernel decides exactly.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { AF_INET, AF_INET6, NETLINK_SOCK_DIAG } from "../../src/diag/constants.js";
import { decodeInetDiagMsg, writeInetDumpRequest } from "../../src/diag/inet.js";
import type { InetSocket } from "../../src/diag/socket.js";
import { ALL_STATES } from "../../src/diag/states.js";
import {
  compileBytecode,
  type FilterNode,
  formatFilter,
  parseFilter,
  resolveCgroupPath,
} from "../../src/filter/index.js";
import { DumpCursor, MessageWriter } from "../../src/netlink/index.js";
import { fromName, type NetNS, openNetlinkIn, runIn } from "../../src/netns/index.js";
import { IPPROTO_TCP, IPPROTO_UDP } from "../../src/sys/socket.js";
import { cleanupLeftovers, describeAsRoot } from "../kit/index.js";
import { compilableTree, hasAutobound } from "./arbitraries.js";
import { type Cookies, cookiesOf, difference, failIfAny } from "./differential-check.js";
import { corpus, sceneExpressions } from "./differential-corpus.js";
import { type FilterScene, listScene, startFilterScene } from "./differential-scene.js";

/** Conditions ss cannot be compared on, which the kernel and the predicate still must agree on. */
const KERNEL_ONLY_EXTRAS = [
  "dev lo",
  "dev != lo",
  "dev 7 or sport = :22",
  "not dev lo and dport = :53",
  "cgroup /",
  "not cgroup /",
  "cgroup / and dport = :53",
  "not autobound",
  "not autobound or src 0.0.0.0",
  "not ( src 0.0.0.0 or dst [::] )",
];

const ROOT_CGROUP = resolveCgroupPath("/") === undefined ? undefined : "/";

describeAsRoot("filter: the kernel runs every compiled program as the predicate reads the filter", () => {
  let scene: FilterScene;
  let netns: NetNS;
  let index: Map<string, InetSocket>;

  before(async () => {
    await cleanupLeftovers();
    scene = await startFilterScene("filter-kernel");
    netns = fromName(scene.ns.name);
    index = new Map(listScene(scene, undefined).map((s) => [s.cookie.toString(), s]));
  });

  after(async () => {
    netns?.close();
    await scene?.stop();
  });

  /**
   * kernelOnly selects the scene's sockets with the program alone, as `ss -a -t -u` asks (one dump per
   * protocol and family, every state), decoding nothing but the cookie: no predicate runs.
   */
  function kernelOnly(bytecode: Buffer): Set<string> {
    using conn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
    const writer = new MessageWriter(Buffer.alloc(64 * 1024));
    const out = new Set<string>();
    for (const [name, protocol] of [["tcp", IPPROTO_TCP] as const, ["udp", IPPROTO_UDP] as const])
      for (const family of [AF_INET, AF_INET6]) {
        const seq = conn.nextSeq();
        writeInetDumpRequest(writer.reset(), seq, { family, protocol, ext: 0, states: ALL_STATES, bytecode });
        conn.send(writer.buf, writer.length);
        using cursor = new DumpCursor(conn, seq, `dump ${name}`);
        const decode = { protocol: name, attributes: false };
        while (cursor.next())
          out.add(decodeInetDiagMsg(cursor.buf, cursor.offset, cursor.length, decode).cookie.toString());
      }
    return out;
  }

  /**
   * check runs one filter three ways and returns undefined when they agree (or, with `autobound`,
   * when the predicate alone selects a superset of the other two, which agree), else a report.
   * `programs` counts the filters that compiled to a program.
   */
  function check(text: string, tree: FilterNode, programs: { count: number }): string | undefined {
    const fail = (what: string) => `  ${JSON.stringify(text)}: ${what}`;
    let bytecode: Buffer | undefined;
    let both: Cookies;
    let predicateOnly: Cookies;
    try {
      // Compiled where the sockets live: `dev` names and the ephemeral port range are the namespace's.
      bytecode = runIn(netns, () => compileBytecode(tree));
      both = cookiesOf(listScene(scene, tree));
      predicateOnly = cookiesOf(listScene(scene, tree, false));
    } catch (err) {
      return fail(`${(err as Error).name}: ${(err as Error).message}`);
    }
    if (bytecode === undefined) return difference(text, both, predicateOnly, index, ["both", "predicate"]);
    programs.count++;
    const kernel = kernelOnly(bytecode);
    const exact = difference(text, kernel, both, index, ["kernel", "both"]);
    if (exact) return exact;
    if (!hasAutobound(tree)) return difference(text, kernel, predicateOnly, index, ["kernel", "predicate"]);
    const lost = [...kernel].filter((c) => !predicateOnly.has(c));
    return lost.length === 0 ? undefined : fail(`the predicate alone lost ${lost.join(", ")}`);
  }

  test("every corpus expression: the kernel accepts its program; kernel, predicate and both agree", () => {
    const texts = [...corpus(), ...KERNEL_ONLY_EXTRAS.filter((t) => ROOT_CGROUP || !t.includes("cgroup"))];
    const programs = { count: 0 };
    const reports = texts.map((t) => check(t, parseFilter(t)!, programs));
    failIfAny("the kernel program and the predicate differ", reports, texts.length);
    assert.ok(
      programs.count >= texts.length * 0.9,
      `only ${programs.count} of ${texts.length} compiled to a program`,
    );
  });

  test("documented: without the kernel program, `autobound` can only test the port range", () => {
    // Sockets bound explicitly to a port inside 32768-60999: the listeners on 40000 and 40001, the
    // UDP socket on 60999 and the UDP sockets on 40002-40011.
    // Matched by address as well as port: an autobound socket may draw any of these ports.
    const explicit = [...index.values()].filter(
      (s) =>
        (s.protocol === "tcp" && s.state === "listening" && [40000, 40001].includes(s.sport)) ||
        (s.protocol === "udp" && s.src === "0.0.0.0" && s.sport === 60999 && s.dport === 0) ||
        (s.protocol === "udp" &&
          s.src === "10.1.0.5" &&
          s.sport >= 40002 &&
          s.sport <= 40011 &&
          s.dst === "10.0.0.1" &&
          s.dport === 80),
    );
    assert.equal(explicit.length, 13);
    const exact = cookiesOf(listScene(scene, "autobound"));
    const rangeOnly = cookiesOf(listScene(scene, "autobound", false));
    assert.ok(exact.size > 0);
    for (const s of explicit) {
      const c = s.cookie.toString();
      assert.ok(rangeOnly.has(c) && !exact.has(c), `socket on port ${s.sport}`);
    }
    assert.deepEqual(
      [...exact].filter((c) => !rangeOnly.has(c)),
      [],
    );
  });

  test("random trees: the kernel never refuses a program; kernel, predicate and both agree", () => {
    // Trees of every node type with values from the filter tests' pools, and trees drawn from the
    // grammar with the scene's own addresses and ports (which select some sockets more often).
    const trees = fc.oneof(
      compilableTree.map(localise),
      sceneExpressions.map((text) => parseFilter(text)!),
    );
    const programs = { count: 0 };
    let splitting = 0;
    const runs = 400;
    fc.assert(
      fc.property(trees, (tree) => {
        const text = formatFilter(tree);
        const report = check(text, tree, programs);
        assert.equal(report, undefined, report);
        const n = listScene(scene, tree).length;
        if (n > 0 && n < index.size) splitting++;
      }),
      { seed: 0x5eed_f17e, numRuns: runs },
    );
    assert.ok(programs.count >= runs * 0.8, `only ${programs.count} of ${runs} trees compiled to a program`);
    assert.ok(splitting >= runs * 0.4, `only ${splitting} of ${runs} trees split the scene`);
  });
});

/**
 * localise makes a generated tree's names resolve in the scene's namespace: `dev eth0` becomes
 * `dev lo` (numeric indexes stay), and every cgroup path the root cgroup, or, where no cgroup v2 is
 * mounted, a mark condition every socket of the scene meets.
 */
function localise(node: FilterNode): FilterNode {
  switch (node.type) {
    case "and":
    case "or":
      return { ...node, left: localise(node.left), right: localise(node.right) };
    case "not":
      return { ...node, operand: localise(node.operand) };
    case "dev":
      return node.device === "eth0" ? { type: "dev", device: "lo" } : node;
    case "cgroup":
      return ROOT_CGROUP ? { type: "cgroup", path: ROOT_CGROUP } : { type: "fwmark", mark: 0, mask: 0 };
    default:
      return node;
  }
}
