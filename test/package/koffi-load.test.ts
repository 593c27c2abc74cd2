/**
 * How sockdiag loads koffi: on Linux x64/arm64 without musl straight from koffi's platform package,
 * without koffi's index (which reads the node binary's ELF header at every start-up); the functions
 * it binds work either way. A koffi upgrade that moves its native module makes the first test fail
 * instead of silently costing every CLI run the slow path.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";

const LIBC = new URL("../../src/sys/libc.js", import.meta.url).href;

/** The CommonJS modules a fresh process has loaded once it imported sockdiag's libc bindings. */
function loadedModules(): { modules: string[]; tid: number } {
  const script = `
    import { createRequire } from "node:module";
    const { native } = await import(${JSON.stringify(LIBC)});
    const modules = Object.keys(createRequire(import.meta.url).cache);
    process.stdout.write(JSON.stringify({ modules, tid: native.gettid() }));
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { modules: string[]; tid: number };
}

const muslLoader = `/lib/ld-musl-${process.arch === "x64" ? "x86_64" : "aarch64"}.so.1`;
const direct =
  process.platform === "linux" && ["x64", "arm64"].includes(process.arch) && !existsSync(muslLoader);

test("on x64/arm64 without musl koffi's native module is loaded without koffi's index", {
  skip: !direct,
}, () => {
  const { modules, tid } = loadedModules();
  assert.ok(
    modules.some((m) => m.endsWith(`/linux_${process.arch}/koffi.node`)),
    modules.join("\n"),
  );
  // koffi's loaders (its index and its platform package's) each leave that package's index.js.
  assert.deepEqual(
    modules.filter((m) => m.endsWith("/index.js") || m.endsWith("/index.cjs")),
    [],
  );
  assert.ok(tid > 0);
});

test("the bound functions work however koffi was loaded", () => {
  const { tid } = loadedModules();
  assert.ok(Number.isInteger(tid) && tid > 0, String(tid));
});
