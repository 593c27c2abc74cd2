/**
 * sockdiag's tarball as `npm pack` makes it, and what a user's project meets in it: every target
 * package.json names is packed and nothing else is, packing builds the package without compiling
 * the tests, TypeScript 7 type-checks a strict project importing it without `--types node`
 * (ES module and CommonJS), and a CommonJS file can require() it. No network: the consumer project
 * gets the tarball extracted, and koffi and @types/node linked from this checkout.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { brokenLinks, npmPack, type Packed, run, withDirectories } from "../kit/index.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  main: string;
  types: string;
  bin: Record<string, string>;
  man: string[];
  exports: Record<string, unknown>;
};

/** Every file a condition of an export names (nested conditions included). */
function targets(value: unknown): string[] {
  if (typeof value === "string") return [value];
  return Object.values(value as Record<string, unknown>).flatMap(targets);
}
const packagePath = (target: string) => posix.normalize(target);
/** The entry points a project can import: the exports that need no custom condition. */
const entries = Object.entries(manifest.exports)
  .filter(
    ([, value]) =>
      typeof value === "string" ||
      Object.keys(value as object).some((c) => /^(default|import|require|node|types)$/.test(c)),
  )
  .map(([key]) => posix.join("sockdiag", key));

/** TypeScript 7's tsc (a devDependency of the private workspace package sockdiag-test-kit). */
const tsc7 = join(
  dirname(createRequire(join(ROOT, "packages/test-kit/package.json")).resolve("typescript/package.json")),
  "bin/tsc",
);

/** The relative modules, URLs and references a packed file loads. */
function relativeLoads(text: string): string[] {
  const found = [
    ...text.matchAll(/(?:from|import|require\()\s*\(?\s*"(\.{1,2}\/[^"]+)"/g),
    ...text.matchAll(/new URL\("(\.{1,2}\/[^"]+)", import\.meta\.url\)/g),
    ...text.matchAll(/\/\/\/ <reference path="([^"]+)"/g),
  ];
  return found.map((m) => m[1]!);
}

describe("npm pack: sockdiag's tarball", () => {
  let scratch: string;
  let packed: Packed;
  let testBuildBefore: number;
  const testBuild = join(ROOT, "dist/test/kit/index.js");

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "sockdiag-pack-"));
    testBuildBefore = statSync(testBuild).mtimeMs;
    packed = npmPack(ROOT, scratch);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test("every target of exports, main, types, bin and man is in the tarball", () => {
    const named = [
      ...targets(manifest.exports),
      manifest.main,
      manifest.types,
      ...Object.values(manifest.bin),
      ...manifest.man,
    ].map(packagePath);
    assert.deepEqual(
      named.filter((path) => !packed.files.includes(path)),
      [],
    );
  });

  test("nothing else: the library's JS, declarations and maps, the CLI bundle and its bin", () => {
    const intended = (path: string) =>
      [
        "package.json",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "src/cli/bin.cjs",
        "src/cli/code-cache.cjs",
        "dist/bundle/sockdiag-cli.cjs",
        "dist/bundle/sockdiag-worker.cjs",
        "dist/man/sockdiag.8",
      ].includes(path) ||
      /^docs\/[^/]+\.md$/.test(path) ||
      (/^dist\/src\/.*\.(js|d\.ts|js\.map|cjs|d\.cts|cjs\.map)$/.test(path) &&
        !path.startsWith("dist/src/cli/"));
    assert.deepEqual(
      packed.files.filter((path) => !intended(path)),
      [],
    );
    assert.ok(packed.files.includes("dist/src/promises/worker.js"), "the promises worker");
    // No build output outlives its source (tsc leaves the JS of a removed .ts behind).
    const stale = packed.files.filter(
      (path) =>
        path.startsWith("dist/src/") &&
        !existsSync(
          join(
            ROOT,
            path
              .slice(5)
              .replace(/(\.d\.ts|\.js|\.js\.map)$/, ".ts")
              .replace(/(\.d\.cts|\.cjs|\.cjs\.map)$/, ".cts"),
          ),
        ),
    );
    assert.deepEqual(stale, []);
  });

  test("every relative module a packed file loads is packed; every source map carries its sources", () => {
    const missing: string[] = [];
    for (const file of packed.files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      if (file.endsWith(".map")) {
        const map = JSON.parse(text) as { sources: string[]; sourcesContent?: (string | null)[] };
        if (map.sourcesContent?.length !== map.sources.length || map.sourcesContent.includes(null))
          missing.push(`${file}: sources not inlined`);
        continue;
      }
      if (!/\.(c?js|d\.ts)$/.test(file)) continue;
      for (const load of relativeLoads(text)) {
        const path = posix.join(posix.dirname(file), load);
        const candidates = file.endsWith(".d.ts") ? [path, path.replace(/\.js$/, ".d.ts")] : [path];
        if (!candidates.some((c) => packed.files.includes(c))) missing.push(`${file} -> ${load}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test("the README, the changelog and docs/ are packed, and every relative link in them resolves inside the tarball", () => {
    for (const file of ["README.md", "CHANGELOG.md", "docs/cli.md", "docs/library.md", "docs/agent.md"])
      assert.ok(packed.files.includes(file), file);
    const present = withDirectories(packed.files);
    const broken = packed.files
      .filter((file) => file.endsWith(".md"))
      .flatMap((file) => brokenLinks(ROOT, file, (path) => present.has(path)));
    assert.deepEqual(broken, []);
  });

  test("packing compiles no tests: the build of test/ is left as it was", () => {
    assert.equal(statSync(testBuild).mtimeMs, testBuildBefore);
  });

  describe("a user's project with the tarball installed", () => {
    let project: string;
    /** One project per module kind, strict, `module: nodenext`, no `types`: TypeScript 7's default. */
    const consumer = (type: "module" | "commonjs") => {
      const dir = join(project, type);
      mkdirSync(dir);
      writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: `consumer-${type}`, type })}\n`);
      writeFileSync(
        join(dir, "tsconfig.json"),
        `${JSON.stringify({ compilerOptions: { strict: true, module: "nodenext", skipLibCheck: false, noEmit: true }, include: ["*.ts"] })}\n`,
      );
      writeFileSync(
        join(dir, "index.ts"),
        `${entries.map((entry, i) => `import * as entry${i} from "${entry}";`).join("\n")}\nexport const entries = [${entries.map((_, i) => `entry${i}`).join(", ")}];\n`,
      );
      return dir;
    };

    before(() => {
      project = join(scratch, "project");
      const modules = join(project, "node_modules");
      mkdirSync(join(modules, "sockdiag"), { recursive: true });
      mkdirSync(join(modules, "@types"));
      run("tar", ["-xzf", packed.tarball, "-C", join(modules, "sockdiag"), "--strip-components=1"], scratch);
      symlinkSync(join(ROOT, "node_modules/koffi"), join(modules, "koffi"));
      symlinkSync(join(ROOT, "node_modules/@types/node"), join(modules, "@types/node"));
    });

    for (const type of ["module", "commonjs"] as const) {
      test(`TypeScript 7 type-checks a strict "type": "${type}" project importing every entry point, without --types`, () => {
        const dir = consumer(type);
        assert.match(run(process.execPath, [tsc7, "--version"], dir), /^Version 7\./);
        const r = spawnSync(process.execPath, [tsc7, "-p", "."], { cwd: dir, encoding: "utf8" });
        assert.equal(r.stdout + r.stderr, "");
        assert.equal(r.status, 0);
      });
    }

    test("a CommonJS file require()s every entry point: the same exports as import (require(esm))", (t) => {
      if (!process.features.require_module) return t.skip(`require(esm) is off in Node ${process.version}`);
      const dir = join(project, "require");
      mkdirSync(dir);
      writeFileSync(
        join(dir, "package.json"),
        `${JSON.stringify({ name: "consumer-require", type: "commonjs" })}\n`,
      );
      writeFileSync(
        join(dir, "main.js"),
        `const entries = ${JSON.stringify(entries)};
Promise.all(entries.map((e) => import(e))).then((imported) => {
  const names = (m) => Object.keys(m).sort().join(" ");
  console.log(JSON.stringify(entries.map((e, i) => [names(require(e)), names(imported[i])])));
});
`,
      );
      const pairs = JSON.parse(run(process.execPath, ["main.js"], dir)) as [string, string][];
      assert.equal(pairs.length, entries.length);
      for (const [required, imported] of pairs) {
        assert.notEqual(required, "");
        assert.equal(required, imported);
      }
    });
  });
});
