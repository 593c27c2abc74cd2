/**
 * The library examples of the README and docs/ are tests: every ```ts block is compiled on its own under
 * `strict`, importing the package by its name ("sockdiag", "sockdiag/promises": the entry points a
 * user imports), and then run as written — as root, in a throwaway network and mount namespace
 * whose /run/netns holds a pinned "pod-a", so that every name an example uses exists and nothing
 * of the host is touched. Whatever examples these documents hold are picked up.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { requireRoot } from "../kit/root.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
// Inside the package, so that "sockdiag" resolves to this package (self-reference by its exports).
const DIR = join(ROOT, "dist", "readme-examples");

/** The ```ts blocks of the README, then of each document in docs/, in order. */
function examples(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs].flatMap((file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  });
}

const OPTIONS: ts.CompilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ["lib.es2022.d.ts", "lib.esnext.disposable.d.ts"],
  types: ["node"],
  skipLibCheck: true,
  outDir: DIR,
  rootDir: DIR,
};

function compile(files: string[]): string[] {
  const program = ts.createProgram(files, OPTIONS);
  const emitted = program.emit();
  return ts
    .getPreEmitDiagnostics(program)
    .concat(emitted.diagnostics)
    .map((d) => {
      const where =
        d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
      const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
      return `${d.file?.fileName ?? ""}:${where ? where.line + 1 : "?"}: ${text}`;
    });
}

test("the README and docs/ have library examples", () => {
  assert.ok(examples().length >= 2);
});

test("every example type-checks under strict against the package entry points", () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const files = examples().map((code, i) => {
    const file = join(DIR, `example-${i + 1}.mts`);
    writeFileSync(file, code);
    return file;
  });
  assert.deepEqual(compile(files), []);
});

test("every example runs as written, in a throwaway namespace with pod-a pinned", async (t) => {
  if (!requireRoot(t)) return;
  const blocks = examples();
  for (let i = 1; i <= blocks.length; i++) {
    const script = join(DIR, `example-${i}.mjs`);
    // A /run and a /proc of its own: the examples' default of every namespace (the pin directories
    // under /run, discovery through /proc) meets only what the example made.
    const setup = `ip link set lo up && mount -t tmpfs tmpfs /run && mkdir /run/netns && ip netns add pod-a && exec "$0" "$1"`;
    const r = await run(
      "unshare",
      [
        ...["--net", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc"],
        ...["--", "sh", "-c", setup, process.execPath, script],
      ],
      { maxBuffer: 1 << 26 },
    ).catch((err: { stderr?: string; code?: number }) => {
      throw new Error(`example ${i} failed (exit ${err.code}):\n${err.stderr}`);
    });
    assert.equal(typeof r.stdout, "string");
  }
});
