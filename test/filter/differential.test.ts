/**
 * Differential test of the filter layer against iproute2's `ss`: in a namespace of a few hundred
 * varied sockets, every expression of the corpus selects through sockdiag (the library for all of
 * them, the CLI for a representative subset) exactly the sockets `ss -a -t -u FILTER` prints,
 * matched by cookie. The known, documented differences are asserted as such, apart.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { InetSocket } from "../../src/diag/socket.js";
import { sockdiag } from "../cli/cli.js";
import { cleanupLeftovers, describeAsRoot } from "../kit/index.js";
import {
  type Cookies,
  cookiesOf,
  difference,
  failIfAny,
  mapLimit,
  ssCookies,
  ssWords,
} from "./differential-check.js";
import { corpus, HAND_WRITTEN } from "./differential-corpus.js";
import { type FilterScene, listScene, startFilterScene } from "./differential-scene.js";

/** ss runs at a time (each is a short child process). */
const PARALLEL = 8;
/** Every CLI_STRIDE-th corpus expression also goes through the CLI (a node start each). */
const CLI_STRIDE = 10;

const sorted = (cookies: Iterable<string>) => [...cookies].sort();

describeAsRoot("filter: sockdiag selects what ss selects", () => {
  const expressions = corpus();
  let scene: FilterScene;
  /** Every socket of the scene by cookie, for describing differences. */
  let index: Map<string, InetSocket>;
  /** What ss printed for each expression, in corpus order. */
  let ssResults: Cookies[];

  before(async () => {
    await cleanupLeftovers();
    scene = await startFilterScene("filter-diff");
    index = new Map(listScene(scene, undefined).map((s) => [s.cookie.toString(), s]));
    ssResults = await mapLimit(expressions, PARALLEL, (e) => ssCookies(scene, e));
  });

  after(async () => {
    await scene?.stop();
  });

  test("without a filter, ss and sockdiag list every socket of the scene", async () => {
    const held = scene.held.map((h) => h.cookie);
    assert.ok(held.length >= 250, `the scene holds only ${held.length} sockets`);
    assert.deepEqual(sorted(index.keys()), sorted(held));
    assert.deepEqual(sorted(await ssCookies(scene, "")), sorted(held));
  });

  test("the corpus is large and discriminating", () => {
    assert.ok(expressions.length >= 100, `only ${expressions.length} expressions`);
    assert.equal(new Set(expressions).size, expressions.length, "the corpus repeats an expression");
    // An expression that selects nothing or everything tests little: most must split the scene.
    const splitting = ssResults.filter((r) => r.size > 0 && r.size < index.size).length;
    assert.ok(
      splitting >= expressions.length * 0.7,
      `only ${splitting} of ${expressions.length} split the scene`,
    );
  });

  test("listSockets selects exactly what ss prints, for every corpus expression", () => {
    const reports = expressions.map((e, i) =>
      difference(e, ssResults[i]!, cookiesOf(listScene(scene, e)), index),
    );
    failIfAny("listSockets and ss differ", reports, expressions.length);
  });

  test("sockdiag ls -j -N NAME -a -t -u FILTER selects what ss prints, for a representative subset", async () => {
    const picked = expressions
      .map((e, i) => ({ e, i }))
      .filter(({ i }) => i % CLI_STRIDE === 0 || i === HAND_WRITTEN.length - 1);
    assert.ok(picked.length >= 20);
    const reports = await mapLimit(picked, 4, async ({ e, i }) => {
      const r = await sockdiag(["ls", "-j", "-N", scene.ns.name, "-a", "-t", "-u", ...ssWords(e)]);
      if (r.code !== 0) return `  ${JSON.stringify(e)}: sockdiag exited ${r.code}: ${r.stderr.trim()}`;
      const got = new Set((JSON.parse(r.stdout) as { cookie: string }[]).map((s) => s.cookie));
      return difference(e, ssResults[i]!, got, index);
    });
    failIfAny("the CLI and ss differ", reports, picked.length);
  });

  /**
   * assertOnlyOursShow checks a documented difference: sockdiag shows every socket of `hidden` and ss
   * none of them, and otherwise both select the same sockets.
   */
  async function assertOnlyOursShow(expression: string, hidden: readonly InetSocket[]): Promise<void> {
    const ours = cookiesOf(listScene(scene, expression));
    const theirs = await ssCookies(scene, expression);
    const hiddenCookies = new Set(hidden.map((s) => s.cookie.toString()));
    assert.ok(
      hiddenCookies.size > 0,
      `nothing in the scene shows the difference of ${JSON.stringify(expression)}`,
    );
    for (const c of hiddenCookies) assert.ok(ours.has(c) && !theirs.has(c), `socket ${c} of ${expression}`);
    const rest = new Set([...ours].filter((c) => !hiddenCookies.has(c)));
    assert.equal(difference(expression, theirs, rest, index), undefined);
  }

  test("documented: under `not`, ss hides IPv6 sockets whose raw address words match an IPv4 prefix", async () => {
    // `dst 0.0.0.0` in the kernel (and sockdiag) matches IPv4 sockets only; ss's user-space check
    // compares the first word whatever the family, so it also matches ::, ::1 and ::ffff:a.b.c.d.
    const hidden = [...index.values()].filter((s) => s.family === "inet6" && s.dstWords[0] === 0);
    await assertOnlyOursShow("not dst 0.0.0.0", hidden);
  });

  test("documented: ss's `not autobound` hides sockets whose two halves disagree; sockdiag's is the complement", async () => {
    // ss's kernel half tests "port not bound by the program", its user-space half "port in
    // ip_local_port_range" (32768-60999 in a new namespace). `autobound` (both) means the same in ss
    // and sockdiag; ss's `not autobound` is "neither", which also hides a socket bound explicitly
    // inside the range and an accepted connection (not bound by the program, on its listener's port).
    const autobound = await ssCookies(scene, "autobound");
    const ours = cookiesOf(listScene(scene, "not autobound"));
    assert.deepEqual(sorted(ours), sorted([...index.keys()].filter((c) => !autobound.has(c))));
    const inRange = (s: InetSocket) => s.sport >= 32768 && s.sport <= 60999;
    const explicit = [...index.values()].filter((s) => inRange(s) && !autobound.has(s.cookie.toString()));
    assert.ok(explicit.length >= 13, `only ${explicit.length} explicitly bound in-range sockets`);
    const listeners = new Set([...index.values()].filter((s) => s.state === "listening").map((s) => s.sport));
    const accepted = [...index.values()].filter(
      (s) => s.protocol === "tcp" && s.state === "established" && !inRange(s) && listeners.has(s.sport),
    );
    await assertOnlyOursShow("not autobound", [...explicit, ...accepted]);
  });
});
