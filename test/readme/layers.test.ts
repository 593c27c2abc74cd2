/**
 * The layer rule, checked from the source tree: docs/DESIGN.md's layer diagram names every folder
 * and top-level file of src/, one row each, top to bottom, and every import or export-from of
 * src/ goes to its own layer or to a row below. Side by side in a row, `a | b` import neither each
 * other, `a -> b` lets a import b, `a <-> b` both ways. The agent (the top row, its own package)
 * imports the core only through its two entries, "sockdiag" and "sockdiag/promises".
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const AGENT = "agent";
const AGENT_SRC = "packages/agent/src";
const CORE_ENTRIES = new Set(["sockdiag", "sockdiag/promises"]);

interface Diagram {
  /** Layer name ("sys/", "index.ts") -> its row, 0 at the top. */
  readonly row: ReadonlyMap<string, number>;
  /** "a -> b" for each pair side by side in a row where a may import b. */
  readonly sideways: ReadonlySet<string>;
}

/** The diagram's rows: the code block under "## Layers", a row's names before its first wide gap. */
function parseDiagram(markdown: string): Diagram {
  const section = markdown.split(/^## Layers.*$/m)[1] ?? "";
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const row = new Map<string, number>();
  const sideways = new Set<string>();
  const cells = block
    .split("\n")
    .filter((line) => /^\S/.test(line))
    .map((line) => line.split(/\s{2,}/)[0] ?? "");
  cells.forEach((cell, index) => {
    const tokens = cell.split(" ");
    for (let i = 0; i < tokens.length; i += 2) {
      const name = tokens[i] ?? "";
      assert.ok(!row.has(name), `docs/DESIGN.md names ${name} in two rows`);
      row.set(name, index);
      if (i === 0) continue;
      const [before, joint] = [tokens[i - 2], tokens[i - 1]];
      assert.ok(["|", "->", "<->"].includes(joint ?? ""), `docs/DESIGN.md row "${cell}": ${joint}`);
      if (joint !== "|") sideways.add(`${before} -> ${name}`);
      if (joint === "<->") sideways.add(`${name} -> ${before}`);
    }
  });
  return { row, sideways };
}

const sourceFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });

/** Every module a file imports or re-exports, statically or through import(). */
const importsOf = (text: string): string[] =>
  ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName);

/** A file's layer: its folder under src/ ("run/"), or the file itself at the top of src/. */
const layerOf = (path: string): string => {
  const [first, ...rest] = posix.relative("src", path).split("/");
  return rest.length > 0 ? `${first}/` : (first ?? "");
};

/** The imports of `files` (paths under src/ with their text) that break the diagram's rule. */
function upwardImports(files: ReadonlyMap<string, string>, diagram: Diagram): string[] {
  const found: string[] = [];
  for (const [file, text] of files) {
    const from = layerOf(file);
    for (const specifier of importsOf(text)) {
      if (!specifier.startsWith(".")) continue;
      const to = layerOf(posix.join(posix.dirname(file), specifier).replace(/\.js$/, ".ts"));
      const [a, b] = [diagram.row.get(from), diagram.row.get(to)];
      if (a === undefined || b === undefined || from === to || b > a) continue;
      if (a === b && diagram.sideways.has(`${from} -> ${to}`)) continue;
      found.push(`${file} imports "${specifier}": ${from} (row ${a}) -> ${to} (row ${b})`);
    }
  }
  return found;
}

const readAll = (paths: string[]) => new Map(paths.map((p) => [p, readFileSync(join(ROOT, p), "utf8")]));
const diagram = parseDiagram(readFileSync(join(ROOT, "docs/DESIGN.md"), "utf8"));
const core = readAll(sourceFiles("src"));

test("docs/DESIGN.md's layer diagram names every folder and top-level file of src/, and nothing else", () => {
  const layers = new Set([...core.keys()].map(layerOf));
  const named = new Set([...diagram.row.keys()].filter((name) => name !== AGENT));
  assert.deepEqual([...layers].filter((l) => !named.has(l)).sort(), [], "in src/, not in the diagram");
  assert.deepEqual([...named].filter((n) => !layers.has(n)).sort(), [], "in the diagram, not in src/");
  assert.equal(diagram.row.get(AGENT), 0, "the agent is the top row");
});

test("every import of src/ goes to its own layer or down (side by side: as the diagram's joints say)", () => {
  assert.deepEqual(upwardImports(core, diagram), []);
});

test("the check names an upward import and a sideways one the diagram does not allow", () => {
  const files = new Map([
    ["src/sys/socket.ts", 'import { x } from "../cli/main.js";'],
    ["src/sockets/dump.ts", 'export { y } from "../conntrack/index.js";\nimport "./query.js";'],
    ["src/run/runner.ts", 'const m = await import("../filter/index.js");'],
    ["src/filter/compile.ts", 'import * as errors from "../errors.js";'],
  ]);
  const rows = "cli/  x\nerrors.ts\nsockets/ | conntrack/\nrun/\nfilter/\nsys/";
  const fence = "```";
  const found = upwardImports(files, parseDiagram(`## Layers\n${fence}\n${rows}\n${fence}\n`));
  assert.deepEqual(found, [
    'src/sys/socket.ts imports "../cli/main.js": sys/ (row 5) -> cli/ (row 0)',
    'src/sockets/dump.ts imports "../conntrack/index.js": sockets/ (row 2) -> conntrack/ (row 2)',
    'src/filter/compile.ts imports "../errors.js": filter/ (row 4) -> errors.ts (row 1)',
  ]);
});

test("the agent imports the core only as sockdiag and sockdiag/promises, and nothing outside its package", () => {
  const agentSrc = join(ROOT, AGENT_SRC);
  const wrong = [...readAll(sourceFiles(AGENT_SRC))].flatMap(([file, text]) =>
    importsOf(text)
      .filter((specifier) =>
        specifier.startsWith(".")
          ? relative(agentSrc, join(ROOT, dirname(file), specifier)).split(sep)[0] === ".."
          : /^sockdiag(\/|$)/.test(specifier) && !CORE_ENTRIES.has(specifier),
      )
      .map((specifier) => `${file} imports "${specifier}"`),
  );
  assert.deepEqual(wrong, []);
  const used = [...readAll(sourceFiles(AGENT_SRC)).values()].flatMap(importsOf);
  assert.ok(used.includes("sockdiag/promises"), "the agent's imports were read");
});
