/**
 * The two packages as a user gets them: `npm pack` makes both tarballs (each building itself on
 * the way: sockdiag's `prepare`, the agent's `prepack`), they are installed alone into a new project
 * outside this repository — nothing of ours from a registry, nothing linked to this checkout — and
 * both bins run from there. The dependencies (koffi; the agent's libraries are in its bundle)
 * come from the npm registry or npm's cache.
 */
import assert from "node:assert/strict";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { brokenLinks, npmPack as pack, run, withDirectories } from "sockdiag-test-kit";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const version = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;

describe("npm pack: both tarballs installed alone into a new project", () => {
  const agentDir = join(ROOT, "packages/agent");
  let scratch: string;
  let project: string;
  let core: ReturnType<typeof pack>;
  let agent: ReturnType<typeof pack>;
  const testBuild = join(agentDir, "dist/test/kit/index.js");
  let testBuildBefore: number;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "sockdiag-agent-pack-"));
    core = pack(ROOT, scratch);
    testBuildBefore = statSync(testBuild).mtimeMs;
    agent = pack(agentDir, scratch);
    project = join(scratch, "project");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "scratch", private: true })}\n`);
    run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", core.tarball, agent.tarball],
      project,
    );
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test("the agent's tarball: its bin, its build, README and LICENSE; no tests", () => {
    for (const file of [
      "bin/sockdiag-agent.js",
      "dist/bundle/sockdiag-agent.mjs",
      "README.md",
      "LICENSE",
      "package.json",
    ])
      assert.ok(agent.files.includes(file), file);
    assert.deepEqual(
      agent.files.filter((f) => !/^(bin|dist\/bundle)\//.test(f)),
      ["LICENSE", "README.md", "package.json"].sort(),
    );
  });

  test("the agent's README links only inside its tarball; the reference it names is installed with sockdiag", () => {
    const present = withDirectories(agent.files);
    assert.deepEqual(
      brokenLinks(agentDir, "README.md", (path) => present.has(path)),
      [],
    );
    assert.match(
      readFileSync(join(agentDir, "README.md"), "utf8"),
      /node_modules\/sockdiag\/docs\/agent\.md/,
    );
    assert.ok(existsSync(join(project, "node_modules/sockdiag/docs/agent.md")));
  });

  test("packing the agent compiles no tests: the build of its test/ is left as it was", () => {
    assert.equal(statSync(testBuild).mtimeMs, testBuildBefore);
  });

  test("sockdiag's tarball: the committed bin, the bundle it loads, the library; no tests", () => {
    for (const file of ["src/cli/bin.cjs", "dist/bundle/sockdiag-cli.cjs", "dist/src/promises/index.js"])
      assert.ok(core.files.includes(file), file);
    assert.equal(core.files.filter((f) => f.startsWith("dist/test/")).length, 0);
  });

  test("both packages are installed from the tarballs, as directories of their own", () => {
    const lock = JSON.parse(readFileSync(join(project, "package-lock.json"), "utf8")) as {
      packages: Record<string, { resolved?: string; link?: boolean }>;
    };
    for (const [name, packed] of [
      ["sockdiag", core],
      ["sockdiag-agent", agent],
    ] as const) {
      assert.equal(lock.packages[`node_modules/${name}`]?.resolved, `file:../${basename(packed.tarball)}`);
      assert.ok(lstatSync(join(project, "node_modules", name)).isDirectory(), `${name} is no link`);
    }
    // The agent's dependency on sockdiag is the one installed at the top, not a copy of its own.
    assert.throws(() => lstatSync(join(project, "node_modules/sockdiag-agent/node_modules/sockdiag")), {
      code: "ENOENT",
    });
  });

  test("npx sockdiag-agent --help and --version", () => {
    assert.match(run("npx", ["--no", "--", "sockdiag-agent", "--help"], project), /^Usage: sockdiag-agent /);
    assert.equal(
      run("npx", ["--no", "--", "sockdiag-agent", "--version"], project),
      `sockdiag-agent ${version(agentDir)}\n`,
    );
  });

  test("npx sockdiag --version", () => {
    assert.equal(run("npx", ["--no", "--", "sockdiag", "--version"], project), `sockdiag ${version(ROOT)}\n`);
  });
});
