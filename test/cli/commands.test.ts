/**
 * The command table and ss's timer text, without a kernel: each command's one-line summary in
 * `sockdiag --help` is the first sentence of its own spec, and -o's times read as ss prints them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { COMMANDS, firstSentence } from "../../src/cli/commands/index.js";
import { VERSION } from "../../src/cli/io/index.js";
import { msTimerText } from "../../src/cli/render/index.js";

test("each command's --help summary line is the first sentence of its spec, under its name", async () => {
  for (const entry of COMMANDS) {
    const { spec } = await entry.load();
    assert.equal(spec.name, entry.name);
    assert.equal(entry.summary, firstSentence(spec.summary));
  }
});

test("VERSION is package.json's version", () => {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, pkg.version);
});

test("timer expiry as ss's print_ms_timer: the two largest units", () => {
  const cases: [number, string][] = [
    [0, ""],
    [355, "355ms"],
    [1500, "1.500ms"],
    [6427, "6.427ms"],
    [9999, "9.999ms"],
    [10_500, "10sec"],
    [43_000, "43sec"],
    [60_000, "1min"],
    [125_250, "2min5sec"],
    [605_000, "10min"],
    [119 * 60_000 + 59_999, "119min"],
    [-5, ""],
  ];
  for (const [ms, text] of cases) assert.equal(msTimerText(ms), text, `${ms} ms`);
});
