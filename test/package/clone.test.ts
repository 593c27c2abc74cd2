/**
 * The repository as a user meets it: a fresh clone of this commit, one `npm install` (npm runs the
 * root's `prepare`), and every package's bin runs — the agent's bundle is built by that install
 * too. npm installs from its cache where it can (the checkout's own install filled it). And both
 * packages say what they are where a registry search looks: description and keywords.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { run } from "../kit/index.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

describe("a fresh clone after one npm install", () => {
  let scratch: string;
  let clone: string;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "sockdiag-clone-"));
    clone = join(scratch, "sockdiag");
    const commit = run("git", ["rev-parse", "HEAD"], ROOT).trim();
    run("git", ["clone", "--quiet", "--no-checkout", ROOT, clone], scratch);
    run("git", ["checkout", "--quiet", commit], clone);
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], clone);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test("npx sockdiag-agent --help prints the agent's usage", () => {
    assert.match(run("npx", ["--no", "--", "sockdiag-agent", "--help"], clone), /^usage: sockdiag-agent/im);
  });

  test("npx sockdiag --help prints the CLI's usage", () => {
    assert.match(run("npx", ["--no", "--", "sockdiag", "--help"], clone), /^usage: sockdiag/im);
  });
});

test("both packages have a description and keywords a registry search finds", () => {
  const words = {
    ".": ["socket", "netlink", "namespace", "conntrack"],
    "packages/agent": ["Kubernetes", "EndpointSlice", "conntrack", "socket"],
  };
  for (const [dir, wanted] of Object.entries(words)) {
    const manifest = JSON.parse(readFileSync(join(ROOT, dir, "package.json"), "utf8")) as {
      description?: string;
      keywords?: string[];
    };
    for (const word of wanted)
      assert.ok(manifest.description?.includes(word), `${dir}: description says ${word}`);
    const keywords = manifest.keywords ?? [];
    assert.ok(keywords.length >= 8, `${dir}: keywords ${JSON.stringify(keywords)}`);
    assert.equal(new Set(keywords).size, keywords.length, `${dir}: keywords are unique`);
    for (const k of keywords)
      assert.match(k, /^[a-z0-9][a-z0-9_-]*$/, `${dir}: keyword ${k} as npm search lists it`);
  }
});
