/**
 * docs/DESIGN.md names the code as it is: every source file it names exists (a path without a
 * top folder is under src/), and a name given with its file ("`Scan` (`sockets/dump.ts`)") is
 * declared there. The layer diagram is checked by layers.test.ts.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DESIGN = readFileSync(join(ROOT, "docs/DESIGN.md"), "utf8");
const TOP_FOLDERS = ["src/", "test/", "scripts/", "bench/", "examples/", "packages/", "deploy/", "dist/"];

const inRepo = (path: string) => (TOP_FOLDERS.some((top) => path.startsWith(top)) ? path : `src/${path}`);

test("every source file docs/DESIGN.md names exists", () => {
  const named = [...DESIGN.matchAll(/`((?:[\w-]+\/)+[\w.-]+\.(?:ts|mjs|cjs))`/g)].map((m) => m[1] ?? "");
  assert.ok(named.length > 20, `read ${named.length} file names`);
  assert.deepEqual(
    named.filter((path) => !existsSync(join(ROOT, inRepo(path)))),
    [],
  );
});

test("a name docs/DESIGN.md gives with its file is declared in that file", () => {
  const pairs = [...DESIGN.matchAll(/`(\w+)` \(`((?:[\w-]+\/)+[\w.-]+\.ts)`\)/g)].map((m) => ({
    name: m[1] ?? "",
    path: m[2] ?? "",
  }));
  assert.ok(pairs.length > 0, "read the pairs");
  const declares = (name: string, path: string) =>
    new RegExp(`\\b(?:function\\*?|class|interface|type|const|let)\\s+${name}\\b`).test(
      readFileSync(join(ROOT, inRepo(path)), "utf8"),
    );
  assert.deepEqual(
    pairs.filter(({ name, path }) => !declares(name, path)).map(({ name, path }) => `${name} in ${path}`),
    [],
  );
});
