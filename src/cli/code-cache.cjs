/**
 * A V8 code cache for the CLI's bundle, on every Node (bin.cjs says why not Node's compile cache
 * where it has one). Loading the bundle without one compiles ~290 KB at every start; with one, V8
 * deserialises what an earlier run compiled.
 *
 * The cache is made at the end of a run (so that it holds the functions the run compiled, not only
 * the top level), and again after the first run of each command it has not seen, up to a bound. Its
 * first line names the bundle it was made from — device, inode, size, mtime and ctime, as Python's
 * .pyc names its source — because V8 checks only the source's length: a cache of another bundle of
 * the same length would run that bundle's code. A cache whose name does not match, or that V8
 * refuses (another Node, other flags, garbage), is made again; it is written to a temporary file and
 * renamed, so a reader never sees half of one. Plain CommonJS, committed, beside bin.cjs.
 */
"use strict";
const { closeSync, fstatSync, openSync, readFileSync, renameSync, writeFileSync } = require("node:fs");
const { createRequire, wrap } = require("node:module");
const { dirname, join } = require("node:path");
const { Script } = require("node:vm");

/** Commands a cache remembers having run; a command not among them makes it again. */
const MAX_COMMANDS = 16;

/** FNV-1a of a string: tells the caches of two installs apart without loading node:crypto. */
function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** The bundle's text and the name of the very file it was read from. */
function readBundle(path) {
  const fd = openSync(path, "r");
  try {
    const st = fstatSync(fd, { bigint: true });
    const name = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    return { name, source: readFileSync(fd, "utf8") };
  } finally {
    closeSync(fd);
  }
}

/** The cache's header (bundle name, commands) and V8 data; undefined when absent or unreadable. */
function readCache(file) {
  let bytes;
  try {
    bytes = readFileSync(file);
  } catch {
    return undefined;
  }
  const end = bytes.indexOf(0x0a);
  if (end < 0 || end > 1024) return undefined;
  const [name, commands = ""] = bytes.toString("latin1", 0, end).split(" ");
  return { name, commands: commands.split(",").filter(Boolean), data: bytes.subarray(end + 1) };
}

function writeCache(file, header, script) {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.concat([Buffer.from(`${header}\n`, "latin1"), script.createCachedData()]), {
    mode: 0o600,
  });
  renameSync(tmp, file);
}

/**
 * Run the CommonJS file `path` as require() would, with its code cache in `dir` (which the caller
 * has checked belongs to the user).
 */
function runWithCodeCache(path, dir) {
  const { name, source } = readBundle(path);
  const file = join(dir, `cli-${process.version}-${process.arch}-${fnv1a(path)}.v8cache`);
  const command = /^[a-z][a-z-]{0,31}$/.test(process.argv[2] ?? "") ? process.argv[2] : "-";
  const cache = readCache(file);
  const usable = cache?.name === name ? cache : undefined;
  // A hashbang is no JavaScript inside the wrapper: commented out, lines and columns unchanged.
  const code = source.startsWith("#!") ? `//${source.slice(2)}` : source;
  const script = new Script(wrap(code), { filename: path, cachedData: usable?.data });
  const known = usable && !script.cachedDataRejected ? usable.commands : undefined;
  if (!known || (!known.includes(command) && known.length < MAX_COMMANDS)) {
    const header = `${name} ${[...(known ?? []), command].join(",")}`;
    process.once("exit", () => {
      try {
        writeCache(file, header, script);
      } catch {
        // A cache that cannot be written (a read-only or full home) only costs the next run time.
      }
    });
  }
  const module = { exports: {}, filename: path, id: path, loaded: false };
  script.runInThisContext()(module.exports, createRequire(path), module, path, dirname(path));
}

module.exports = { runWithCodeCache };
