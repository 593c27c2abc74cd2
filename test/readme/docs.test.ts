/**
 * The README is a user's guide and the reference lives in docs/: every relative link of the
 * README, the changelog, docs/ and the agent's README resolves in the clone (a file that exists,
 * a heading that exists), the README stays short and gives the quick start as it is run, and none
 * of these documents dates a figure or names a commit or "this machine" (bench/RESULTS.md keeps
 * that history). test/package/tarball.test.ts checks the same links inside the packed tarball.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { brokenLinks, markdownLinks } from "../kit/index.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DOCS = readdirSync(join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);
const DOCUMENTS = ["README.md", "CHANGELOG.md", "packages/agent/README.md", ...DOCS];
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

test("the reference is in docs/: the CLI, the library, the agent, the design, performance", () => {
  for (const file of [
    "docs/cli.md",
    "docs/library.md",
    "docs/agent.md",
    "docs/DESIGN.md",
    "docs/performance.md",
  ])
    assert.ok(DOCS.includes(file), file);
});

test("every relative link of the README, the changelog and docs/ resolves in the clone", () => {
  const broken = DOCUMENTS.flatMap((file) => brokenLinks(ROOT, file, (p) => existsSync(join(ROOT, p))));
  assert.deepEqual(broken, []);
});

test("the README links to every document of docs/ and to the changelog", () => {
  const links = new Set(markdownLinks(read("README.md")).map((l) => l.split("#")[0]));
  assert.deepEqual(
    [...DOCS, "CHANGELOG.md"].filter((f) => !links.has(f)),
    [],
  );
});

test("the README is a short guide with the quick start as it is run", () => {
  const readme = read("README.md");
  assert.ok(readme.split("\n").length <= 250, `${readme.split("\n").length} lines`);
  assert.match(readme, /^npm install && npm run demo$/m);
  assert.match(readme, /^npm test$/m);
  for (const heading of ["## Install", "## Quick start", "## Privileges", "## Recipes"])
    assert.ok(readme.includes(`\n${heading}\n`), heading);
  assert.match(readme, /nothing is published/i);
});

test("no commit hashes, dates or 'this machine' in the README, the changelog or docs/", () => {
  const found: string[] = [];
  for (const file of DOCUMENTS) {
    const lines = read(file).split("\n");
    lines.forEach((line, i) => {
      const prose = line.replace(/https?:\/\/\S+/g, "");
      const patterns: [string, RegExp][] = [
        ["a commit hash", /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b/],
        [
          "a date",
          /\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b|\b\d{4}-\d{2}-\d{2}\b|\b\d{2}:\d{2}(–\d{2}:\d{2})? UTC\b/,
        ],
        ["this machine", /\bthis machine\b/i],
      ];
      for (const [what, pattern] of patterns)
        if (pattern.test(prose)) found.push(`${file}:${i + 1}: ${what}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});
