/**
 * The bin keeps a compile cache (the V8 code cache of code-cache.cjs) only where no one but root and
 * the user running it can change the cache or any folder above it: whoever can write the cache
 * chooses the code root runs. The attacks are made as an unprivileged user (nobody) would make them,
 * on a root that runs `sockdiag --version`; a cache made from another bundle, or a corrupt one,
 * never changes what runs either.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import Module from "node:module";
import { basename, dirname, join } from "node:path";
import { test } from "node:test";
import { Script } from "node:vm";
import { describeAsRoot } from "../kit/index.js";
import { CLI_MAIN } from "./cli.js";

const NOBODY = 65534;
const REPO = join(dirname(CLI_MAIN), "..", "..");
const BUNDLE = join(REPO, "dist", "bundle", "sockdiag-cli.cjs");

/**
 * A scratch folder where a cache may live: under /run, whose chain from `/` is root's alone (/tmp
 * is writable by everyone, so a cache under it is never used). Mode 0755, so that nobody can reach
 * what a test lets it reach.
 */
function privateScratch(): string {
  const dir = mkdtempSync("/run/sdt-cache-");
  chmodSync(dir, 0o755);
  return dir;
}

function withScratch(fn: (base: string) => void): () => void {
  return () => {
    const base = privateScratch();
    try {
      fn(base);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  };
}

/** A directory made with `mode` (mkdir's mode is cut by the umask; chmod's is not). */
function dirWithMode(path: string, mode: number): string {
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

/** Run `bin --version` with HOME set to `home`: its exit code, output and pid. */
function versionRun(home: string, bin = CLI_MAIN): { status: number | null; stdout: string; pid: number } {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  const { status, stdout, pid } = spawnSync(process.execPath, [bin, "--version"], { env, encoding: "utf8" });
  return { status, stdout, pid };
}

function versionWith(bin: string, home: string): string {
  const { status, stdout } = versionRun(home, bin);
  assert.equal(status, 0);
  return stdout;
}

/** What `sockdiag --version` prints, from a run that keeps no cache. */
function expectedVersion(): string {
  const env = { ...process.env, NODE_DISABLE_COMPILE_CACHE: "1" };
  const out = execFileSync(process.execPath, [CLI_MAIN, "--version"], { env, encoding: "utf8" });
  assert.match(out, /^sockdiag \d/);
  return out;
}

/** Every file under dir, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? (e as { path?: string }).path ?? dir, e.name));
}

/** The one cache file in a home's .cache/sockdiag: its path, first line and inode. */
function cacheIn(home: string): { file: string; header: string; inode: number } {
  const [file, ...others] = filesUnder(join(home, ".cache", "sockdiag"));
  assert.ok(file, "a cache was written");
  assert.deepEqual(others, [], "one cache file");
  const text = readFileSync(file, "latin1");
  return { file, header: text.slice(0, text.indexOf("\n")), inode: statSync(file).ino };
}

/** The cache a root in a home of its own gets for this install: its file name and first line. */
function rootsOwnCache(base: string): { name: string; header: string } {
  const home = dirWithMode(join(base, "root-home"), 0o700);
  assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
  const { file, header } = cacheIn(home);
  return { name: basename(file), header };
}

/**
 * A cache that V8 takes for this install's bundle but that runs other code: a source of the
 * bundle's length (all V8 checks) whose function writes root's uid to `marker`, compiled, behind
 * the header that names the bundle (its stat, which anyone who can see the bundle reads).
 */
function foreignCache(header: string, marker: string): Buffer {
  const source = readFileSync(BUNDLE, "utf8");
  const length = Module.wrap(source.startsWith("#!") ? `//${source.slice(2)}` : source).length;
  const body = `(function (exports, require) { require("node:fs").writeFileSync(${JSON.stringify(marker)}, String(process.getuid())); });`;
  const script = new Script(body.padEnd(length, " "));
  script.runInThisContext();
  return Buffer.concat([Buffer.from(`${header}\n`, "latin1"), script.createCachedData()]);
}

/** Run `script` in sh as the user nobody (arguments $1...), with `input` on its stdin. */
function asNobody(script: string, args: readonly string[], input?: Buffer): void {
  execFileSync("sh", ["-c", script, "sh", ...args], { uid: NOBODY, gid: NOBODY, cwd: "/", input });
}

/** nobody writes `bytes` as `file`, making its folder (as `mkdir -p`). */
function plantAsNobody(file: string, bytes: Buffer): void {
  asNobody('mkdir -p "$(dirname "$1")" && cat > "$1"', [file], bytes);
}

/** A run as root in `home` ran no foreign code, and did its job. */
function assertRootRanItsOwn(home: string, marker: string): void {
  const { status, stdout } = versionRun(home);
  assert.equal(existsSync(marker), false, "root ran the foreign cache's code");
  assert.equal(status, 0);
  assert.equal(stdout, expectedVersion());
}

describeAsRoot("the CLI's code cache", () => {
  test(
    "a root in a home of its own writes the cache, 0600, and reads it at the next run",
    withScratch((base) => {
      const home = dirWithMode(join(base, "home"), 0o700);
      assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
      const first = cacheIn(home);
      const st = statSync(first.file);
      assert.equal(st.mode & 0o7777, 0o600);
      assert.equal(st.uid, 0);
      assert.equal(statSync(join(home, ".cache")).mode & 0o777, 0o700);
      // Read and taken by V8, with this command known: left as it was (a cache not read, or
      // refused, is made again, in a new file).
      assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
      assert.equal(cacheIn(home).inode, first.inode);
    }),
  );

  test(
    "a cache file of another mode or owner is not read, and is made again",
    withScratch((base) => {
      const home = dirWithMode(join(base, "home"), 0o755);
      versionWith(CLI_MAIN, home);
      for (const change of [
        (f: string) => chmodSync(f, 0o644),
        (f: string) => chownSync(f, NOBODY, NOBODY),
      ]) {
        const before = cacheIn(home);
        change(before.file);
        assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
        const after = cacheIn(home);
        assert.notEqual(after.inode, before.inode);
        assert.equal(statSync(after.file).mode & 0o7777, 0o600);
        assert.equal(statSync(after.file).uid, 0);
      }
    }),
  );

  test(
    "a new cache removes the caches this install made under earlier names, and no other",
    withScratch((base) => {
      const { name } = rootsOwnCache(base);
      const hash = /^cli-([0-9a-f]{8})\.v8cache$/.exec(name)?.[1];
      assert.ok(hash, `one cache file per install, named by its hash: ${name}`);
      const home = dirWithMode(join(base, "home"), 0o700);
      const dir = join(home, ".cache", "sockdiag");
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const old = [`cli-v18.20.0-x64-${hash}.v8cache`, `cli-v20.0.0-arm64-${hash}.v8cache`];
      const another = `cli-v20.0.0-x64-${hash === "00000000" ? "11111111" : "00000000"}.v8cache`;
      for (const file of [...old, another]) writeFileSync(join(dir, file), "old", { mode: 0o600 });
      assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
      assert.deepEqual(readdirSync(dir).sort(), [another, name].sort());
    }),
  );

  test(
    "a home that belongs to another user gets no cache",
    withScratch((base) => {
      const home = dirWithMode(join(base, "home"), 0o755);
      chownSync(home, NOBODY, NOBODY);
      assert.equal(versionWith(CLI_MAIN, home), expectedVersion());
      assert.equal(existsSync(join(home, ".cache")), false);
    }),
  );

  test(
    "a home others may write, its .cache a link to a root-owned folder holding nobody's cache: root runs its own code",
    withScratch((base) => {
      const { name, header } = rootsOwnCache(base);
      const marker = join(base, "marker");
      const home = dirWithMode(join(base, "home"), 0o1777);
      const shared = dirWithMode(join(base, "shared"), 0o1777);
      plantAsNobody(join(shared, "sockdiag", name), foreignCache(header, marker));
      asNobody('ln -s "$1" "$2"', [shared, join(home, ".cache")]);
      assertRootRanItsOwn(home, marker);
    }),
  );

  test(
    "a root-owned home whose .cache is mode 1777, holding nobody's cache: root runs its own code",
    withScratch((base) => {
      const { name, header } = rootsOwnCache(base);
      const marker = join(base, "marker");
      const home = dirWithMode(join(base, "home"), 0o755);
      dirWithMode(join(home, ".cache"), 0o1777);
      plantAsNobody(join(home, ".cache", "sockdiag", name), foreignCache(header, marker));
      assertRootRanItsOwn(home, marker);
    }),
  );

  test(
    "links planted on the cache's next temporary names clobber nothing",
    withScratch((base) => {
      const { name } = rootsOwnCache(base);
      const secret = join(base, "secret");
      writeFileSync(secret, "root's own\n", { mode: 0o600 });
      const home = dirWithMode(join(base, "home"), 0o1777);
      const shared = dirWithMode(join(base, "shared"), 0o1777);
      const dir = join(shared, "sockdiag");
      asNobody('mkdir "$1" && ln -s "$2" "$3"', [dir, shared, join(home, ".cache")]);
      // The next 2,000 process ids, planted as nobody's links. The test makes them and gives them to
      // nobody (lchown): a node run as nobody could not start where the node binary sits in a
      // mode-0700 folder (CI's Node 24 under /root/.cache).
      const first = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8")) + 1;
      for (let pid = first; pid < first + 2000; pid++) {
        const link = join(dir, `${name}.${pid}.tmp`);
        symlinkSync(secret, link);
        lchownSync(link, NOBODY, NOBODY);
      }
      const { status, stdout, pid } = versionRun(home);
      assert.ok(pid >= first && pid < first + 2000, `root's run (pid ${pid}) had a link planted on its name`);
      assert.ok(readFileSync(secret, "utf8") === "root's own\n", "root's file was overwritten");
      assert.equal(statSync(secret).mode & 0o7777, 0o600);
      assert.equal(status, 0);
      assert.equal(stdout, expectedVersion());
    }),
  );
});

/**
 * A copy of the installed layout (bin, bundle, koffi) in a scratch folder, so that a test can
 * change the bundle under a cache made from it.
 */
function scratchInstall(root: string): { bin: string; bundle: string } {
  const bin = join(root, "src", "cli", "bin.cjs");
  const bundle = join(root, "dist", "bundle", "sockdiag-cli.cjs");
  mkdirSync(dirname(bin), { recursive: true });
  mkdirSync(dirname(bundle), { recursive: true });
  copyFileSync(CLI_MAIN, bin);
  copyFileSync(join(dirname(CLI_MAIN), "code-cache.cjs"), join(dirname(bin), "code-cache.cjs"));
  copyFileSync(BUNDLE, bundle);
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  return { bin, bundle };
}

describeAsRoot("the CLI's code cache and its bundle", () => {
  test(
    "a cache made from another bundle, or a corrupt one, never changes what runs",
    withScratch((root) => {
      const home = dirWithMode(join(root, "home"), 0o700);
      const { bin, bundle } = scratchInstall(root);
      const first = versionWith(bin, home);
      assert.match(first, /^sockdiag \d/);
      // The same length, other code: a cache keyed by length alone would run the old bundle.
      const text = readFileSync(bundle, "utf8");
      const stale = text.replace(
        /(VERSION\s*=\s*")(\d)/,
        (_, head: string, d: string) => `${head}${d === "9" ? 8 : 9}`,
      );
      assert.notEqual(stale, text, "the bundle's version text was found");
      assert.equal(stale.length, text.length);
      writeFileSync(bundle, stale);
      const changed = versionWith(bin, home);
      assert.notEqual(changed, first);
      assert.match(changed, /^sockdiag \d/);
      // Every cache file overwritten with garbage of its own length: the run must not notice.
      const cached = filesUnder(join(home, ".cache", "sockdiag"));
      assert.ok(cached.length > 0, "the runs left a cache");
      for (const file of cached) writeFileSync(file, Buffer.alloc(statSync(file).size, 0xa5));
      assert.equal(versionWith(bin, home), changed);
      for (const file of cached) writeFileSync(file, "");
      assert.equal(versionWith(bin, home), changed);
    }),
  );

  /**
   * code-cache.cjs (what the bin uses), run by a runner beside the bin: `node runner.cjs COMMAND`
   * loads the bundle through it with its cache in `home`.
   */
  function codeCacheRunner(root: string, bundle: string, home: string): (...args: string[]) => string {
    const runner = join(root, "runner.cjs");
    const codeCache = join(dirname(CLI_MAIN), "code-cache.cjs");
    writeFileSync(
      runner,
      `require(${JSON.stringify(codeCache)}).runWithCodeCache(${JSON.stringify(bundle)}, ${JSON.stringify(home)});`,
    );
    return (...args) => execFileSync(process.execPath, [runner, ...args], { encoding: "utf8" });
  }

  test(
    "the code cache is made at a command's first run, kept by the next, made again for a new command",
    withScratch((root) => {
      const { bundle } = scratchInstall(root);
      const home = dirWithMode(join(root, "home"), 0o700);
      const run = codeCacheRunner(root, bundle, home);
      const help = execFileSync(process.execPath, [bundle, "help", "ls"], { encoding: "utf8" });
      assert.equal(run("help", "ls"), help);
      const first = cacheIn(home);
      const st = statSync(bundle, { bigint: true });
      assert.equal(
        first.header,
        `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${process.version}:${process.arch} help`,
      );
      // Accepted by V8 and the command known: the file is left as it was.
      assert.equal(run("help", "ls"), help);
      assert.equal(cacheIn(home).inode, first.inode);
      // A command it has not run: made again, naming both ("-" for an option in the command's place).
      assert.match(run("--version"), /^sockdiag \d/);
      const second = cacheIn(home);
      assert.notEqual(second.inode, first.inode);
      assert.match(second.header, / help,-$/);
      // Garbage after a header that names the bundle: V8 refuses it, the output is the same, and the
      // cache is made again.
      writeFileSync(
        second.file,
        Buffer.concat([Buffer.from(`${second.header}\n`), Buffer.alloc(4096, 0x5a)]),
      );
      const garbage = statSync(second.file).ino;
      assert.equal(run("help", "ls"), help);
      const third = cacheIn(home);
      assert.notEqual(third.inode, garbage);
      assert.ok(statSync(third.file).size > 100_000, "a whole cache again");
    }),
  );
});
