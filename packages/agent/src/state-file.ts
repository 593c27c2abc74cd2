/**
 * StateFile: the backends the agent would terminate if they went away, kept in `--state-dir` so
 * that a removal that happens while the agent is down (restart, upgrade, crash) is still acted on
 * when it starts again. Written atomically: a temporary file in the same directory, fsync, rename,
 * fsync of the directory — a reader sees the old set or the new one, never half of one.
 *
 * The directory is a hostPath, shared with the host: whoever else can write there could plant a
 * symbolic link or a huge file. So the directory must be ours and writable by us alone (prepare),
 * the temporary file is created exclusively under a random name and never through a link, and the
 * state file is read without following a link and only up to a size cap.
 */
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, mkdir, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { asBackend, type BackendKey, backendKey, keyText, parseKeyText } from "./backend.js";
import { BrokenAnswerError, ObjectStream } from "./object-stream.js";

/** Backends the agent knows, and the Service listing them. */
export interface KnownGroup {
  /** The Service ("namespace/name") that lists them; undefined for backends known with no Service. */
  service: string | undefined;
  keys: readonly BackendKey[];
}

/** What load() found. */
export interface LoadedState {
  /** Backend -> the Services that listed it. */
  backends: Map<BackendKey, string[]>;
  /**
   * Set when the file exists but could not be used: unreadable, a symbolic link, not a regular
   * file, larger than maxBytes, not JSON, of an unknown version. The set is then empty.
   */
  problem?: string;
  /** Entries of the file that were not valid backends and were left out. */
  invalid: number;
}

/** Options of a StateFile. */
export interface StateFileOptions {
  /** The largest state file load() reads; a larger one is a problem. Default 64 MiB. */
  maxBytes?: number;
}

/** The state directory cannot be used safely (see StateFile.prepare). */
export class StateDirError extends Error {
  override readonly name = "StateDirError";
  readonly code = "ERR_SOCKDIAG_AGENT_STATE_DIR";
  constructor(
    readonly path: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`state directory ${path}: ${reason}`, options);
  }
}

const FILE = "backends.json";
const VERSION = 2;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** Entries checked between two turns of the event loop: checking 100,000 keys takes ~200 ms. */
const CHUNK = 4096;
/** The size of the pieces a state file is written in. */
const PIECE_BYTES = 256 * 1024;

// O_NONBLOCK: opening a FIFO planted at the path would otherwise wait for a writer forever.
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CREATE_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * The saved set grouped by Service (version 2): each Service's first group, by the place of its
 * first group the places of its other groups, and the backends with no Service.
 */
interface Body {
  groups: readonly KnownGroup[];
  first: Map<string, number>;
  more: Map<number, number[]>;
  unlisted: BackendKey[];
}

export class StateFile {
  /** The state file: `<dir>/backends.json`. */
  readonly path: string;
  /** The largest state file load() reads. */
  readonly maxBytes: number;
  private writing: Promise<void> = Promise.resolve();
  private next: KnownGroup[] | undefined;

  /** Throws a RangeError when maxBytes is not a positive integer. Touches nothing on disk. */
  constructor(
    readonly dir: string,
    options: StateFileOptions = {},
  ) {
    this.path = join(dir, FILE);
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!Number.isSafeInteger(this.maxBytes) || this.maxBytes < 1)
      throw new RangeError(`maxBytes must be a positive integer, not ${options.maxBytes}`);
  }

  /**
   * Make the state directory if it is absent (mode 0700, parents too), then check that it is safe
   * to use: a real directory — not a symbolic link, whose target whoever controls the link could
   * change under us (mount the hostPath itself, or pass its real path) — owned by the effective
   * uid and not writable by group or others, who could otherwise plant links and files in it.
   * Only the directory itself is checked: its parents belong to the host and the image.
   * Throws a StateDirError naming the path and the reason (a failing mkdir or lstat included).
   */
  async prepare(): Promise<void> {
    let st: Stats;
    try {
      st = await lstat(this.dir).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
        await mkdir(this.dir, { recursive: true, mode: 0o700 });
        return lstat(this.dir);
      });
    } catch (err) {
      throw new StateDirError(this.dir, `cannot be made or examined: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (st.isSymbolicLink())
      throw new StateDirError(this.dir, "is a symbolic link; give the directory's real path");
    if (!st.isDirectory()) throw new StateDirError(this.dir, "is not a directory");
    const mode = (st.mode & 0o7777).toString(8).padStart(4, "0");
    if ((st.mode & 0o022) !== 0)
      throw new StateDirError(this.dir, `is writable by group or others (mode ${mode}); chmod go-w it`);
    const euid = process.geteuid?.();
    if (euid !== undefined && st.uid !== euid)
      throw new StateDirError(this.dir, `is owned by uid ${st.uid}, not by this process (uid ${euid})`);
  }

  /**
   * Read the saved set; no file yet is an empty set. Reads version 2 and version 1 files, read in
   * pieces with turns of the event loop between (see decode). Never throws: a file that cannot be
   * used is reported in `problem`, and never read past maxBytes.
   */
  async load(): Promise<LoadedState> {
    let file: FileHandle;
    try {
      file = await open(this.path, READ_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { backends: new Map(), invalid: 0 };
      if (code === "ELOOP") return unusable(`${this.path} is a symbolic link; not followed`);
      return unusable(`cannot read ${this.path}: ${(err as Error).message}`);
    }
    try {
      const st = await file.stat();
      if (!st.isFile()) return unusable(`${this.path} is not a regular file`);
      if (st.size > this.maxBytes)
        return unusable(`${this.path} is ${st.size} bytes, more than the ${this.maxBytes} read at most`);
      return await decode(this.path, chunksOf(file, st.size), st.size);
    } catch (err) {
      if (err instanceof BrokenAnswerError) return unusable(err.message);
      return unusable(`cannot read ${this.path}: ${(err as Error).message}`);
    } finally {
      await file.close().catch(() => undefined);
    }
  }

  /**
   * Replace the saved set. The iterable is read at once, before save returns (its groups' key
   * arrays must not change afterwards: the agent's are its slices', never changed once kept); the
   * groups are then merged by Service and written over many turns of the event loop, so the file
   * holds the set as it was when save was called, whatever changes meanwhile. A backend with no
   * Service is saved as "unlisted". Saves run one at a time; a save asked for while one is writing
   * replaces any other waiting one, so that only the newest set is written next. Rejects when
   * writing fails (the directory gone or unusable, disk full, a name taken); a planted link is
   * never followed.
   */
  save(known: Iterable<KnownGroup>): Promise<void> {
    const groups = [...known];
    const first = this.next === undefined;
    this.next = groups;
    if (!first) return this.writing;
    this.writing = this.writing
      .catch(() => undefined)
      .then(() => {
        const set = this.next!;
        this.next = undefined;
        return this.write(set);
      });
    return this.writing;
  }

  private async write(groups: readonly KnownGroup[]): Promise<void> {
    const body = await group(groups);
    // A random name that nobody can plant a link at in advance, created exclusively, never
    // through a link: whatever is at the name already makes the open fail.
    const tmp = join(this.dir, `.${FILE}.${randomBytes(16).toString("hex")}.tmp`);
    const file = await open(tmp, CREATE_FLAGS, 0o600);
    let renamed = false;
    try {
      try {
        await writeBody(body, (bytes) => file.writeFile(bytes));
        await file.sync();
      } finally {
        await file.close();
      }
      // rename replaces whatever entry is at the path, a planted link included, never its target.
      await rename(tmp, this.path);
      renamed = true;
      const dir = await open(this.dir, DIR_FLAGS);
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    } catch (err) {
      if (!renamed) await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }
}

/**
 * The groups merged by Service, CHUNK groups a turn of the event loop: with 100,000 Services in one
 * turn, this took 50-120 ms. Most Services come as one group, kept as it is; the others list the
 * places of their other groups.
 */
async function group(groups: readonly KnownGroup[]): Promise<Body> {
  const first = new Map<string, number>();
  const more = new Map<number, number[]>();
  const unlisted: BackendKey[] = [];
  for (let i = 0; i < groups.length; i++) {
    if (i % CHUNK === CHUNK - 1) await turn();
    const { service, keys } = groups[i]!;
    if (service === undefined) {
      for (const key of keys) unlisted.push(key);
      continue;
    }
    const at = first.get(service);
    if (at === undefined) first.set(service, i);
    else {
      const others = more.get(at);
      if (others) others.push(i);
      else more.set(at, [i]);
    }
  }
  return { groups, first, more, unlisted };
}

/**
 * Write the file's text (a version 2 body) through `write`, in pieces of about PIECE_BYTES encoded
 * into one buffer reused for every piece, each write awaited (a turn of the event loop); a key
 * costs no string. Before, each key's text, each Service's JSON array and a quarter-megabyte string
 * a piece made ~25 MB of garbage with a million backends, and mark-compact pauses of 50-240 ms.
 */
async function writeBody(body: Body, write: (bytes: Buffer) => Promise<void>): Promise<void> {
  const out = new Encoder(write);
  await out.text(`{"version":${VERSION},"savedAt":${JSON.stringify(new Date().toISOString())},"services":{`);
  let comma = false;
  for (const [service, at] of body.first) {
    if (comma) out.byte(COMMA);
    comma = true;
    await out.text(SAFE.test(service) ? `"${service}"` : JSON.stringify(service));
    out.byte(COLON);
    out.byte(OPEN);
    const others = body.more.get(at);
    let keyComma = false;
    for (let j = -1; j < (others?.length ?? 0); j++)
      for (const key of body.groups[j < 0 ? at : others![j]!]!.keys) {
        if (keyComma) out.byte(COMMA);
        keyComma = true;
        if (out.key(key)) await out.flush();
      }
    out.byte(CLOSE);
  }
  await out.text('},"unlisted":[');
  for (let i = 0; i < body.unlisted.length; i++) {
    if (i > 0) out.byte(COMMA);
    if (out.key(body.unlisted[i]!)) await out.flush();
  }
  await out.text("]}\n");
  await out.flush();
}

/** A Service name that JSON prints as it is, between quotes (every real one: printable ASCII). */
const SAFE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const [COMMA, COLON, OPEN, CLOSE, QUOTE] = [..."\x2c:[]\x22"].map((c) => c.charCodeAt(0)) as [
  number,
  number,
  number,
  number,
  number,
];
/**
 * Room kept free in the buffer after each key and text: the few single bytes written between two
 * of them (a comma, a colon, a bracket) never need a check.
 */
const SLACK = 16;
/** The most one key's text takes, quoted: "[" + 45 characters of IPv6 (a dotted tail) + "]:65535/udp". */
const KEY_BYTES = 64;

/** JSON text into a reused buffer, written out by `write` when it fills. */
class Encoder {
  private readonly buf = Buffer.allocUnsafe(PIECE_BYTES);
  private at = 0;

  constructor(private readonly write: (bytes: Buffer) => Promise<void>) {}

  byte(c: number): void {
    this.buf[this.at++] = c;
  }

  /** A key as a JSON string ("10.0.0.5:53/udp"); true when the buffer is to be flushed now. */
  key(key: BackendKey): boolean {
    const buf = this.buf;
    if (typeof key !== "number") {
      this.at += buf.write(`"${keyText(key)}"`, this.at, "latin1");
    } else {
      // keyText's text, digit by digit: an IPv4 key is address x 2^17 + port x 2 + protocol.
      const low = key % 131072;
      const address = (key - low) / 131072;
      buf[this.at++] = QUOTE;
      for (let shift = 24; shift >= 0; shift -= 8) {
        this.decimal((address >>> shift) & 255);
        buf[this.at++] = shift > 0 ? 0x2e : 0x3a; // "." between octets, ":" before the port
      }
      this.decimal(low >>> 1);
      this.at += buf.write((low & 1) === 1 ? '/tcp"' : '/udp"', this.at, "latin1");
    }
    return this.at > PIECE_BYTES - KEY_BYTES - SLACK;
  }

  /** Any text (JSON already); written on its own when it is larger than a piece. */
  async text(text: string): Promise<void> {
    const bytes = Buffer.byteLength(text);
    if (this.at + bytes > PIECE_BYTES - KEY_BYTES - SLACK) await this.flush();
    if (bytes > PIECE_BYTES - KEY_BYTES - SLACK) await this.write(Buffer.from(text));
    else this.at += this.buf.write(text, this.at);
  }

  async flush(): Promise<void> {
    if (this.at === 0) return;
    const length = this.at;
    this.at = 0;
    await this.write(this.buf.subarray(0, length));
  }

  /** A number from 0 to 65535 in decimal. */
  private decimal(n: number): void {
    const buf = this.buf;
    if (n >= 10000) buf[this.at++] = 0x30 + Math.floor(n / 10000);
    if (n >= 1000) buf[this.at++] = 0x30 + (Math.floor(n / 1000) % 10);
    if (n >= 100) buf[this.at++] = 0x30 + (Math.floor(n / 100) % 10);
    if (n >= 10) buf[this.at++] = 0x30 + (Math.floor(n / 10) % 10);
    buf[this.at++] = 0x30 + (n % 10);
  }
}

function addService(backends: Map<BackendKey, string[]>, key: BackendKey, service: string | undefined): void {
  const services = backends.get(key);
  if (services === undefined) backends.set(key, service === undefined ? [] : [service]);
  else if (service !== undefined && !services.includes(service)) services.push(service);
}

/**
 * The bytes of a state file read and decoded at a time, a turn of the event loop each: ~1,300
 * keys, 1-3 ms (64 KiB turns took twice as long; the longest turns are the collector's).
 */
const READ_BYTES = 32 * 1024;

/** The file's bytes, READ_BYTES at a time; it is not read past one byte more than fstat said. */
async function* chunksOf(file: FileHandle, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; ; ) {
    // A buffer each: the stream keeps a piece that spans two chunks.
    const { bytesRead, buffer } = await file.read(Buffer.allocUnsafe(READ_BYTES), 0, READ_BYTES, at);
    if (bytesRead === 0) return;
    at += bytesRead;
    if (at > size) throw new Error("it grew while being read");
    yield buffer.subarray(0, bytesRead);
  }
}

function unusable(problem: string): LoadedState {
  return { backends: new Map(), invalid: 0, problem };
}

/**
 * Decode a state file as it is read, by the ObjectStream that reads list answers: each Service of
 * a version 2 body and each unlisted backend as it comes, READ_BYTES a turn of the event loop (one
 * JSON.parse of the ~24 MB of 100,000 Services held the loop 0.3-1.5 s), and at most CHUNK backends
 * of a long Service's list added a turn; the list itself is parsed in one (100,000 backends, 2.3 MB:
 * 35-55 ms). What is accepted is what JSON.parse accepts, and a version 2
 * body is read as it did (a Service's list that is not an array and an entry that is not a
 * backend's text are invalid, counted and left out); anything else is a problem, and nothing of
 * the file is kept. A version 1 body's list is parsed whole: only an agent from before version 2
 * wrote it, and the next save replaces it.
 */
async function decode(path: string, chunks: AsyncIterable<Buffer>, size: number): Promise<LoadedState> {
  const backends = new Map<BackendKey, string[]>();
  let invalid = 0;
  const add = (text: unknown, service: string | undefined) => {
    const key = typeof text === "string" ? parseKeyText(text) : undefined;
    if (key === undefined) invalid++;
    else addService(backends, key, service);
  };
  // Services of more than CHUNK backends, added after the chunk that held them, CHUNK a turn of
  // the event loop (20,000 took 40 ms at once); the others at once, adding no garbage to collect.
  const long: [service: string, keys: unknown[]][] = [];
  const file = new ObjectStream(
    (member, piece) => {
      if (member === "unlisted") add(piece, undefined);
      // A Service, as an object of one member: `{"namespace/name": [key, ...]}`.
      else
        for (const service in piece as Record<string, unknown>) {
          const keys = (piece as Record<string, unknown>)[service];
          if (!Array.isArray(keys)) invalid++;
          else if (keys.length > CHUNK) long.push([service, keys]);
          else for (const key of keys) add(key, service);
        }
    },
    // Bounded by the file's size, itself at most maxBytes.
    { what: path, streamed: { services: "{", unlisted: "[" }, maxPieceBytes: size, maxBytes: size },
  );
  for await (const chunk of chunks) {
    file.write(chunk);
    for (const [service, keys] of long.splice(0))
      for (let i = 0; i < keys.length; i++) {
        if (i % CHUNK === CHUNK - 1) await turn();
        add(keys[i], service);
      }
  }
  const { members, streamed } = file.end();
  // Version 2: "services" an object, "unlisted" an array or absent.
  if (
    members.version === 2 &&
    streamed.has("services") &&
    !("services" in members) &&
    !("unlisted" in members)
  )
    return { backends, invalid };
  if (members.version === 1 && Array.isArray(members.backends)) return await fromVersion1(members.backends);
  return unusable(`${path} is not a version 1 or 2 state file`);
}

/** Version 1: `backends: [{address, port, protocol, services}]`, as agents before this one wrote. */
async function fromVersion1(entries: unknown[]): Promise<LoadedState> {
  const backends = new Map<BackendKey, string[]>();
  let invalid = 0;
  let count = 0;
  for (const entry of entries) {
    if (++count % CHUNK === 0) await turn();
    const backend = asBackend(entry);
    if (!backend) {
      invalid++;
      continue;
    }
    // Canonical now: a mapped address saved apart from its IPv4 form joins it here.
    const key = backendKey(backend);
    addService(backends, key, undefined);
    const services = (entry as { services?: unknown }).services;
    if (Array.isArray(services))
      for (const service of services) if (typeof service === "string") addService(backends, key, service);
  }
  return { backends, invalid };
}
