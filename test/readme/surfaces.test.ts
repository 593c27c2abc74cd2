/**
 * Each folder's public surface is its index.ts, checked from the source tree: an index.ts under
 * src/ is imported by some module of the project or is a package entry (an index nothing imports
 * goes), and a module of src/ outside a folder that has an index imports that folder through it.
 * Past the index go a layer's errors.ts (src/errors.ts gathers them into the `errors` export) and
 * the imports to and from what PAST_THE_INDEX names, each with its reason.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** Where modules that may import an index live. */
const IMPORTERS = [
  "src",
  "packages/agent/src",
  "packages/agent/test",
  "packages/agent/bench",
  "test",
  "bench",
];

/** Modules and folders still imported past their index (or importing so), and why. */
const PAST_THE_INDEX: Readonly<Record<string, string>> = {
  "src/sys/capabilities.ts": "it loads no FFI binding, which sys' index (libc.ts) would",
};

const under = (path: string, place: string) => path === place || path.startsWith(`${place}/`);
const excepted = (path: string) => Object.keys(PAST_THE_INDEX).some((place) => under(path, place));

const sourceFiles = (dir: string): string[] =>
  existsSync(join(ROOT, dir))
    ? readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
        const path = posix.join(dir, entry.name);
        if (entry.isDirectory()) return entry.name === "node_modules" ? [] : sourceFiles(path);
        return /\.[cm]?ts$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
      })
    : [];

/** The project's files each module of `files` imports or re-exports (relative specifiers, as .ts). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => posix.join(posix.dirname(file), specifier).replace(/\.[cm]?js$/, ".ts"));
}

/** The package entries: every file package.json's exports name, as its source. */
function entries(): Set<string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: object };
  const paths = JSON.stringify(pkg.exports).match(/\.\/dist\/src\/[\w/.-]+\.js/g) ?? [];
  return new Set(paths.map((p) => p.replace("./dist/", "").replace(/\.js$/, ".ts")));
}

const indexes = sourceFiles("src").filter((f) => posix.basename(f) === "index.ts");

test("every index.ts under src/ is imported by a module of the project or is a package entry", () => {
  const imported = new Set(IMPORTERS.flatMap(sourceFiles).flatMap(importsOf));
  const packageEntries = entries();
  assert.ok(packageEntries.has("src/index.ts"), "read package.json's exports");
  assert.deepEqual(
    indexes.filter((f) => !imported.has(f) && !packageEntries.has(f) && !excepted(f)),
    [],
  );
});

test("src/ imports a folder that has an index.ts through it (or its errors.ts)", () => {
  const withIndex = indexes.map(posix.dirname).filter((dir) => dir !== "src");
  const past: string[] = [];
  for (const file of sourceFiles("src")) {
    for (const target of importsOf(file)) {
      const folder = withIndex
        .filter((dir) => target.startsWith(`${dir}/`) && !file.startsWith(`${dir}/`))
        .sort((a, b) => b.length - a.length)[0];
      if (folder === undefined || target === `${folder}/index.ts`) continue;
      if (excepted(target) || excepted(file)) continue;
      if (/(^|-)errors\.ts$/.test(posix.basename(target))) continue;
      past.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(past, []);
});
