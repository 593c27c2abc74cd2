/**
 * A V8 code cache for the CLI's bundle, on every Node (bin.cjs says why not Node's compile cache
 * where it has one). Loading the bundle without one compiles ~290 KB at every start; with one, V8
 * deserialises what an earlier run compiled.
 *
 * Whoever can write the cache chooses the code that runs (V8 checks only the source's length), so
 * a cache is read or written only where nobody else can change it: every folder from `/` down to
 * the cache's is a real directory (not a link) owned by root or this user and writable by neither
 * group nor others, and the file is opened without following a link and used only when it is a
 * regular file of this user's, mode 0600. Anywhere else the bundle runs without a cache.
 *
 * The cache is made at the end of a run (so that it holds the functions the run compiled, not only
 * the top level), and again after the first run of each command it has not seen, up to a bound. Its
 * first line names the bundle it was made from — device, inode, size, mtime and ctime, as Python's
 * .pyc names its source — and the Node that made it: a cache of another bundle of the same length
 * would run that bundle's code. A cache whose name does not match, or that V8 refuses (another
 * Node, other flags, garbage), is made again: written to a new file and renamed over the old one,
 * so a reader never sees half of one. One file per install, whatever the Node. Plain CommonJS,
 * committed, beside bin.cjs.
 */
"use strict";
const fs = require("node:fs");
const { createRequire, wrap } = require("node:module");
const { dirname, join, resolve } = require("node:path");
const { Script } = require("node:vm");

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_RDONLY, O_WRONLY } = fs.constants;

/** Commands a cache remembers having run; a command not among them makes it again. */
const MAX_COMMANDS = 16;

/** FNV-1a of a string: tells the caches of two installs apart without loading node:crypto. */
function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** Whether lstat's answer is a directory that only root or this process's user can change. */
function isPrivateDir(st, euid) {
  return st.isDirectory() && (st.uid === 0 || st.uid === euid) && (st.mode & 0o022) === 0;
}

/**
 * `home`/.cache/sockdiag, made where missing (mode 0700), when it and every folder above it is
 * private to root and this user; undefined otherwise. A folder so checked cannot change under us:
 * only its owner can rename or replace what it holds.
 */
function privateCacheDir(home) {
  const euid = process.geteuid();
  const dir = join(resolve(home), ".cache", "sockdiag");
  const makeable = dir.length - "/.cache/sockdiag".length;
  let path = "/";
  for (const part of ["", ...dir.split("/").filter(Boolean)]) {
    path = join(path, part);
    let st;
    try {
      st = fs.lstatSync(path);
    } catch (err) {
      if (err.code !== "ENOENT" || path.length <= makeable) return undefined;
      try {
        fs.mkdirSync(path, { mode: 0o700 });
        st = fs.lstatSync(path);
      } catch {
        return undefined;
      }
    }
    if (!isPrivateDir(st, euid)) return undefined;
  }
  return dir;
}

/** The bundle's text and the name of the very file it was read from, and of the Node reading it. */
function readBundle(path) {
  const fd = fs.openSync(path, "r");
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    const name = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${process.version}:${process.arch}`;
    return { name, source: fs.readFileSync(fd, "utf8") };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The cache's header (bundle name, commands) and V8 data; undefined when absent, unreadable, a
 * link, or not a regular file of this user's with mode 0600.
 */
function readCache(file) {
  let fd;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW);
  } catch {
    return undefined;
  }
  let bytes;
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== process.geteuid() || (st.mode & 0o7777) !== 0o600) return undefined;
    bytes = fs.readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
  const end = bytes.indexOf(0x0a);
  if (end < 0 || end > 1024) return undefined;
  const [name, commands = ""] = bytes.toString("latin1", 0, end).split(" ");
  return { name, commands: commands.split(",").filter(Boolean), data: bytes.subarray(end + 1) };
}

/** Write `bytes` to a file of our own made for them (never an existing one), then rename it to `file`. */
function replaceFile(file, bytes) {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    try {
      fs.fchmodSync(fd, 0o600);
      fs.writeFileSync(fd, bytes);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/** Remove this install's caches named as earlier versions named them (one per Node they ran on). */
function removeOldCaches(dir, hash) {
  const old = new RegExp(`^cli-.+-${hash}\\.v8cache$`);
  for (const name of fs.readdirSync(dir)) if (old.test(name)) fs.rmSync(join(dir, name), { force: true });
}

/**
 * Run the CommonJS file `path` as require() would, with its code cache in `home`/.cache/sockdiag
 * where that folder is private (see above), without one elsewhere.
 */
function runWithCodeCache(path, home) {
  const dir = privateCacheDir(home);
  if (!dir) return require(path);
  const { name, source } = readBundle(path);
  const hash = fnv1a(path);
  const file = join(dir, `cli-${hash}.v8cache`);
  const command = /^[a-z][a-z-]{0,31}$/.test(process.argv[2] ?? "") ? process.argv[2] : "-";
  const cache = readCache(file);
  const usable = cache?.name === name ? cache : undefined;
  // A hashbang is no JavaScript inside the wrapper: commented out, lines and columns unchanged.
  const code = source.startsWith("#!") ? `//${source.slice(2)}` : source;
  const script = new Script(wrap(code), { filename: path, cachedData: usable?.data });
  const known = usable && !script.cachedDataRejected ? usable.commands : undefined;
  if (!known || (!known.includes(command) && known.length < MAX_COMMANDS)) {
    const header = `${name} ${[...(known ?? []), command].join(",")}\n`;
    process.once("exit", () => {
      try {
        replaceFile(file, Buffer.concat([Buffer.from(header, "latin1"), script.createCachedData()]));
        removeOldCaches(dir, hash);
      } catch {
        // A cache that cannot be written (a read-only or full home) only costs the next run time.
      }
    });
  }
  const module = { exports: {}, filename: path, id: path, loaded: false };
  script.runInThisContext()(module.exports, createRequire(path), module, path, dirname(path));
}

module.exports = { runWithCodeCache };
