/**
 * selectsEverything: a filter whose every condition is a wildcard selects as much as none, and a
 * destroy refuses it alike; a filter with one narrowing condition is a selection.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter, prepareFilter, selectsEverything } from "../../src/filter/index.js";

const everything = [
  "dst *",
  "src *:*",
  "dport = :*",
  "sport eq *",
  "dst 0.0.0.0/0",
  "src ::/0",
  "sport >= :0",
  "dport <= :65535",
  "fwmark 0/0",
  "dst * and dport = :*",
  "dport = :53 or dst *",
  "not not dst *",
  "not (dst 10.0.0.1 and not src *)",
];
const selections = [
  "fwmark 5/0",
  "dst 10.0.0.1",
  "dport = :53",
  "dst 0.0.0.0/1",
  "dst * and dport = :53",
  "not dst *",
  "dport != :*",
  "sport > :0",
  "fwmark 0/1",
  "dev lo",
  "autobound",
  "dport = :53 or dst 10.0.0.1",
];

test("a filter of wildcards only selects everything", () => {
  for (const text of everything) assert.equal(selectsEverything(parseFilter(text)), true, text);
  assert.equal(selectsEverything(undefined), true, "no filter");
  assert.equal(selectsEverything(prepareFilter({ or: [{ dport: 53 }, { dst: "*" }] }, false).tree), true);
});

test("a filter with one narrowing condition is a selection", () => {
  for (const text of selections) assert.equal(selectsEverything(parseFilter(text)), false, text);
});
