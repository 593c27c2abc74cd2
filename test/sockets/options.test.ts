/** The option checks every public call shares: unknown keys, their nearest known key, booleans. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { checkBoolean, checkOptions, nearest, QueryError } from "../../src/options/index.js";
import { checkRunOptions, RUN_OPTION_KEYS } from "../../src/run/index.js";
import { listSockets } from "../../src/sockets/index.js";

test("the nearest known key of a typo", () => {
  const keys = ["protocols", "families", "states", "filter", "dryRun", "all", "netns", "netnsDirs"];
  assert.equal(nearest("protocol", keys), "protocols");
  assert.equal(nearest("dryrun", keys), "dryRun");
  assert.equal(nearest("netnsDir", keys), "netnsDirs");
  assert.equal(nearest("familes", keys), "families");
  assert.equal(nearest("colour", keys), undefined);
});

test("checkOptions names the unknown key, its field and the nearest known one", () => {
  const known = { protocols: true, netns: true } as const;
  assert.throws(
    () => checkOptions({ protocol: ["udp"] }, known, "query"),
    (err: unknown) =>
      err instanceof QueryError && err.field === "protocol" && /did you mean "protocols"\?/.test(err.message),
  );
  assert.throws(
    () => checkOptions({ netsn: "a" }, known, "config"),
    (err: unknown) => err instanceof QueryError && err.field === "config.netsn",
  );
  for (const bad of [undefined, null, "x", 0, []])
    assert.throws(
      () => checkOptions(bad, known, "anyOf[0]"),
      (err: unknown) => err instanceof QueryError && err.field === "anyOf[0]",
    );
  checkOptions({ protocols: ["udp"], netns: undefined, typo: undefined }, known, "query");
});

test("checkBoolean takes true, false and undefined only", () => {
  for (const ok of [true, false, undefined]) checkBoolean(ok, "all");
  for (const bad of ["false", "true", [], 0, 1, null, {}])
    assert.throws(
      () => checkBoolean(bad, "all"),
      (err: unknown) => err instanceof QueryError && err.field === "all",
    );
});

test("checkRunOptions: the flags, batch size and callbacks of a destroy or a delete", () => {
  const known = { ...RUN_OPTION_KEYS, onOutcome: true };
  checkRunOptions(
    { all: true, dryRun: false, batchSize: 64, predicate: () => true, onOutcome: () => {} },
    known,
  );
  for (const [bad, field] of [
    [{ all: "false" }, "all"],
    [{ dryRun: 1 }, "dryRun"],
    [{ batchSize: "512" }, "batchSize"],
    [{ batchSize: 0 }, "batchSize"],
    [{ batchSize: 1.5 }, "batchSize"],
    [{ predicate: "keep" }, "predicate"],
    [{ onOutcome: {} }, "onOutcome"],
  ] as const)
    assert.throws(
      () => checkRunOptions(bad, known),
      (err: unknown) => err instanceof QueryError && err.field === field,
    );
});

test("a lone string where a list belongs is refused whole, not read one letter at a time", () => {
  for (const [query, field] of [
    [{ protocols: "udp" }, "protocols"],
    [{ families: "inet" }, "families"],
    [{ states: "established" }, "states"],
    [{ exclude: "listening" }, "exclude"],
    [{ extensions: "tcpinfo" }, "extensions"],
  ] as const)
    assert.throws(
      () => listSockets(query as never),
      (err: unknown) =>
        err instanceof QueryError && err.field === field && /expected an array; write \["/.test(err.message),
      field,
    );
});
