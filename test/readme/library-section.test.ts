/**
 * docs/library.md is what the package is: its code blocks are the example files
 * (which the build type-checks), its export lists are the entry points' runtime exports, and each
 * example runs to completion against `sockdiag` and `sockdiag/promises` in a throwaway network and
 * mount namespace holding a pinned namespace "pod-a".
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { describeAsRoot } from "../kit/index.js";

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const library = readFileSync(root("docs/library.md"), "utf8");

const blocks = [...library.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
const exportsListed = (entry: string) => {
  const start = library.indexOf(`Runtime exports of \`${entry}\``);
  const paragraph = library.slice(start, library.indexOf("\n\n", start));
  return [...paragraph.slice(paragraph.indexOf(":")).matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]).sort();
};

test("docs/library.md's code blocks are the example files", () => {
  assert.deepEqual(blocks, [
    readFileSync(root("examples/library.ts"), "utf8"),
    readFileSync(root("examples/conntrack.ts"), "utf8"),
    readFileSync(root("examples/promises.ts"), "utf8"),
  ]);
});

test("docs/library.md lists exactly the runtime exports of each entry point", async () => {
  assert.deepEqual(exportsListed("sockdiag"), Object.keys(await import("sockdiag")).sort());
  assert.deepEqual(exportsListed("sockdiag/promises"), Object.keys(await import("sockdiag/promises")).sort());
});

test("docs/library.md says the package is ES modules only, and how CommonJS loads it on each Node line", () => {
  const paragraph = library.slice(library.indexOf("**ES modules only.**"));
  assert.notEqual(library.indexOf("**ES modules only.**"), -1);
  for (const words of [
    "require(esm)",
    "20.19",
    "22.12",
    "ERR_REQUIRE_ESM",
    "await import(",
    "nodenext",
    "TS1309",
  ])
    assert.ok(paragraph.slice(0, paragraph.indexOf("\n\n")).includes(words), words);
});

describeAsRoot("docs/library.md's examples run", () => {
  for (const example of ["library", "conntrack", "promises"]) {
    test(`examples/${example}.ts`, () => {
      const script = [
        // A /run and a /proc of its own: the examples' default of every namespace (the pin
        // directories under /run, discovery through /proc) meets only what the example made.
        "mount -t tmpfs sdt-readme /run",
        "mkdir /run/netns",
        "ip link set lo up",
        "ip netns add pod-a",
        `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(root(`dist/examples/${example}.js`))}`,
      ].join(" && ");
      const r = spawnSync(
        "unshare",
        [
          "--mount",
          "--net",
          "--propagation",
          "private",
          "--pid",
          "--fork",
          "--mount-proc",
          "sh",
          "-c",
          script,
        ],
        {
          encoding: "utf8",
          timeout: 60_000,
        },
      );
      assert.equal(r.error, undefined);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    });
  }
});
