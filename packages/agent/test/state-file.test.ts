import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, mock, test } from "node:test";
import { keyText, parseKeyText } from "../src/backend.js";
import { type KnownGroup, type LoadedState, StateDirError, StateFile } from "../src/state-file.js";
import { TurnCounter } from "./kit/turns.js";

/** A backend and the Services that list it, as tests write them. */
interface KnownBackend {
  key: string;
  services: readonly string[];
}

/** Backends as the agent hands them to save(): one group per Service that lists each. */
function groups(backends: Iterable<KnownBackend>): KnownGroup[] {
  return [...backends].flatMap(({ key, services }): KnownGroup[] =>
    services.length === 0
      ? [{ service: undefined, keys: [parseKeyText(key)!] }]
      : services.map((service) => ({ service, keys: [parseKeyText(key)!] })),
  );
}

/** What load() found, each backend as its text. */
async function loadTexts(
  state: StateFile,
): Promise<Omit<LoadedState, "backends"> & { backends: Map<string, string[]> }> {
  const loaded = await state.load();
  return {
    ...loaded,
    backends: new Map([...loaded.backends].map(([key, services]) => [keyText(key), services])),
  };
}

const dirs: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sockdiag-agent-state-"));
  dirs.push(dir);
  return dir;
}
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const dns = "kube-system/kube-dns";
const a: KnownBackend = { key: "10.0.0.1:53/udp", services: [dns] };
const b: KnownBackend = { key: "[fd00::5]:53/tcp", services: [] };

/** A file outside the state directory that a planted link points at; it must never change. */
async function victim(): Promise<string> {
  const path = join(await scratch(), "victim");
  await writeFile(path, "precious\n");
  return path;
}

describe("StateFile", () => {
  test("no file is an empty set; prepare makes the directory 0700; a saved set loads back", async () => {
    const dir = join(await scratch(), "nested", "state");
    const state = new StateFile(dir);
    await state.prepare();
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    await state.prepare(); // an existing directory that is fine stays fine
    assert.deepEqual(await loadTexts(state), { backends: new Map(), invalid: 0 });
    await state.save(groups([a, b]));
    assert.deepEqual(await loadTexts(new StateFile(dir)), {
      backends: new Map([
        [a.key, [dns]],
        [b.key, []],
      ]),
      invalid: 0,
    });
    assert.deepEqual(await readdir(dir), ["backends.json"], "a temporary file was left behind");
    assert.equal((await stat(state.path)).mode & 0o777, 0o600);
  });

  test("saves asked for while one is writing: the newest set is what ends on disk", async () => {
    const state = new StateFile(await scratch());
    await Promise.all([
      state.save(groups([a])),
      state.save(groups([b])),
      state.save(groups([a, b])),
      state.save(groups([b])),
    ]);
    assert.deepEqual([...(await loadTexts(state)).backends.keys()], [b.key]);
  });

  test("save reads the iterable when it is called, not when it writes", async () => {
    const state = new StateFile(await scratch());
    const known = new Map([[a.key, a]]);
    const saving = state.save(groups(known.values()));
    known.set(b.key, b);
    await saving;
    assert.deepEqual([...(await loadTexts(state)).backends.keys()], [a.key]);
  });

  test("the file is written whole: version 2, one line, grouped by Service", async () => {
    const state = new StateFile(await scratch());
    await state.save(groups([a, b, { key: "10.0.0.2:53/udp", services: [dns, "default/other"] }]));
    const text = await readFile(state.path, "utf8");
    assert.ok(text.endsWith("}\n"));
    assert.equal(text.indexOf("\n"), text.length - 1);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    assert.equal(parsed.version, 2);
    assert.equal(typeof parsed.savedAt, "string");
    assert.deepEqual(parsed.services, {
      [dns]: ["10.0.0.1:53/udp", "10.0.0.2:53/udp"],
      "default/other": ["10.0.0.2:53/udp"],
    });
    assert.deepEqual(parsed.unlisted, ["[fd00::5]:53/tcp"]);
  });

  test("version 2 round trip: a backend under two Services loads with both", async () => {
    const state = new StateFile(await scratch());
    const shared = "10.0.0.9:53/udp";
    await state.save(
      groups([
        { key: shared, services: ["ns/one", "ns/two"] },
        { key: "10.0.0.8:53/udp", services: ["ns/one"] },
        { key: "[fd00::8]:80/tcp", services: ["ns/two"] },
        { key: "10.0.0.7:9/tcp", services: [] },
      ]),
    );
    const loaded = await loadTexts(state);
    assert.equal(loaded.invalid, 0);
    assert.equal(loaded.problem, undefined);
    assert.deepEqual(
      new Map([...loaded.backends].sort()),
      new Map([
        ["10.0.0.7:9/tcp", []],
        ["10.0.0.8:53/udp", ["ns/one"]],
        [shared, ["ns/one", "ns/two"]],
        ["[fd00::8]:80/tcp", ["ns/two"]],
      ]),
    );
  });

  test("100,000 backends round trip", async () => {
    const state = new StateFile(await scratch());
    const known: KnownBackend[] = [];
    for (let i = 0; i < 100_000; i++) {
      const address = distinctAddress(i, i % 2 === 0);
      known.push({ key: `${address}:${1 + (i % 1000)}/udp`, services: [`ns/svc-${i % 10_000}`] });
    }
    await state.save(groups(known));
    const loaded = await loadTexts(state);
    assert.equal(loaded.invalid, 0);
    assert.equal(loaded.backends.size, known.length);
    for (const { key, services } of known) assert.deepEqual(loaded.backends.get(key), services, key);
  });

  test("a large file loads over many turns of the event loop, whole and exact; cut anywhere, it is not JSON", async () => {
    const state = new StateFile(await scratch());
    // 100,000 Services of one backend each; every 100th backend also in a second Service; unlisted ones.
    const known: KnownBackend[] = [];
    for (let i = 0; i < 100_000; i++) {
      const address = distinctAddress(i, i % 5 === 0);
      const services = i % 1000 === 3 ? [] : i % 100 ? [`ns/svc-${i}`] : [`ns/svc-${i}`, `ns/"q\\${i}\u00e9`];
      known.push({ key: `${address}:${1 + (i % 65535)}/${i % 3 ? "udp" : "tcp"}`, services });
    }
    await state.save(groups(known));
    const size = (await stat(state.path)).size;
    const loop = new TurnCounter();
    const loaded = await loadTexts(state);
    loop.stop();
    const { turns } = loop;
    // Before, one JSON.parse of the whole file, then 4,096 keys a turn: ~30 turns for ~4 MB.
    assert.ok(
      turns >= size / (64 * 1024),
      `${size} bytes decoded over ${turns} turns: 64 KiB a turn at most`,
    );
    assert.equal(loaded.problem, undefined);
    assert.equal(loaded.invalid, 0);
    assert.equal(loaded.backends.size, known.length);
    for (const { key, services } of known) assert.deepEqual(loaded.backends.get(key), services, key);
    const text = await readFile(state.path);
    for (const cut of [1, 13, 4096, 32 * 1024 + 1, size / 3, size / 2, size - 40, size - 2]) {
      await writeFile(state.path, text.subarray(0, Math.floor(cut)));
      const cutShort = await loadTexts(state);
      assert.match(cutShort.problem ?? "", /is not JSON at byte \d+: it ends early$/, `cut at ${cut}`);
      assert.deepEqual(cutShort.backends, new Map());
    }
  });

  test("a Service of 100,000 backends: its backends are added 4,096 a turn of the event loop at most", async () => {
    const state = new StateFile(await scratch());
    const texts = Array.from(
      { length: 100_000 },
      (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:53/udp`,
    );
    await state.save([{ service: "ns/huge", keys: texts.map((t) => parseKeyText(t)!) }]);
    const loop = new TurnCounter();
    // Backends added to the loaded map, by the turn they were added in.
    const addedIn: number[] = [];
    const set = Map.prototype.set;
    const seen = mock.method(
      Map.prototype,
      "set",
      function (this: Map<unknown, unknown>, key: unknown, value: unknown) {
        if (Array.isArray(value) && value[0] === "ns/huge")
          addedIn[loop.turns] = (addedIn[loop.turns] ?? 0) + 1;
        return set.call(this, key, value);
      },
    );
    let loaded: LoadedState;
    try {
      loaded = await state.load();
    } finally {
      seen.mock.restore();
      loop.stop();
    }
    assert.equal(loaded.problem, undefined);
    assert.equal(loaded.backends.size, texts.length);
    const counts = addedIn.filter((n) => n !== undefined);
    assert.equal(
      counts.reduce((a, b) => a + b),
      texts.length,
    );
    assert.ok(Math.max(...counts) <= 4096, `${Math.max(...counts)} backends added in one turn`);
  });

  test("a cut or corrupted file: unusable exactly when JSON.parse throws, reported and never thrown", async () => {
    const state = new StateFile(await scratch());
    await state.save(groups([a, b, { key: "10.0.0.2:53/udp", services: [dns, 'ns/"odd\\\u00e9'] }]));
    const saved = await readFile(state.path);
    const texts: Buffer[] = [];
    for (let cut = 0; cut < saved.length; cut++) texts.push(saved.subarray(0, cut));
    for (let at = 0; at < saved.length; at++)
      for (const c of '\x01]},:"\\ 0e-[{n') {
        const text = Buffer.from(saved);
        text[at] = c.charCodeAt(0);
        texts.push(text);
        texts.push(Buffer.concat([saved.subarray(0, at), Buffer.from(c), saved.subarray(at)]));
      }
    let unusable = 0;
    for (const text of texts) {
      await writeFile(state.path, text);
      let json = true;
      try {
        JSON.parse(text.toString("utf8"));
      } catch {
        json = false;
      }
      const loaded = await loadTexts(state);
      const shown = JSON.stringify(text.toString("latin1"));
      if (json) assert.doesNotMatch(loaded.problem ?? "", /not JSON/, shown);
      else {
        unusable++;
        assert.match(loaded.problem ?? "", /is not (JSON at byte \d+: |a JSON object$)/, shown);
        assert.deepEqual(loaded.backends, new Map(), shown);
      }
    }
    // Each cut but the one that leaves out only the last newline, and about a third of the others.
    assert.ok(unusable > saved.length + texts.length / 4, `${unusable} of ${texts.length} not JSON`);
  });

  test("a large save is spread over turns of the event loop, and writes each key as keyText prints it", async () => {
    const state = new StateFile(await scratch());
    // 60,000 Services of 3 groups (slices) each, ~1.2 million backends; keys of every length.
    const v4 = ["1.0.0.0", "9.9.9.9", "10.20.30.40", "100.200.255.254", "255.255.255.254"];
    const v6 = [
      "[fd00::5]",
      "[1111:2222:3333:4444:5555:6666:7777:8888]",
      "[::1.2.3.4]",
      "[2001:db8::ff00:42:8329]",
    ];
    const ports = [1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 65535];
    const known: KnownGroup[] = [];
    const expected: Record<string, string[]> = {};
    const unlisted: string[] = [];
    let n = 0;
    const texts = (count: number) =>
      Array.from({ length: count }, () => {
        const i = n++;
        const address =
          i % 7 === 0 ? v6[i % v6.length]! : `${v4[i % v4.length]!.replace(/\.\d+$/, "")}.${i % 250}`;
        return `${address}:${ports[i % ports.length]!}/${i % 3 === 0 ? "tcp" : "udp"}`;
      });
    // Names JSON prints as they are, and names it escapes; one longer than a piece of the file.
    const names = (s: number) =>
      s === 7
        ? `ns/${"x".repeat(300_000)}`
        : s % 1000 === 1
          ? `ns/"q\\${s}\u00e9\u2028\n`
          : `ns${s % 50}/svc-${s}`;
    let loop: TurnCounter | undefined;
    // How many groups are read in each turn of the event loop (each group's Service is read once).
    const readIn = new Map<number, number>();
    const group = (service: string | undefined, keys: string[]): KnownGroup => ({
      get service() {
        const turn = loop?.turns ?? 0;
        readIn.set(turn, (readIn.get(turn) ?? 0) + 1);
        return service;
      },
      keys: keys.map((t) => parseKeyText(t)!),
    });
    for (let round = 0; round < 3; round++)
      for (let s = 0; s < 60_000; s++) {
        const keys = texts(6 + round);
        known.push(group(names(s), keys));
        expected[names(s)] = [...(expected[names(s)] ?? []), ...keys];
        if (s % 20_000 === 0) {
          const alone = texts(1);
          known.push(group(undefined, alone));
          unlisted.push(...alone);
        }
      }
    loop = new TurnCounter();
    await state.save(known);
    loop.stop();
    assert.equal(
      [...readIn.values()].reduce((a, b) => a + b),
      known.length,
    );
    assert.ok(Math.max(...readIn.values()) <= 4096, "4,096 groups merged a turn at most");
    assert.ok(readIn.size >= known.length / 4096, `read over ${readIn.size} turns`);
    const text = await readFile(state.path, "utf8");
    assert.equal(text.indexOf("\n"), text.length - 1);
    const parsed = JSON.parse(text) as {
      version: number;
      services: Record<string, string[]>;
      unlisted: string[];
    };
    assert.equal(parsed.version, 2);
    assert.deepEqual(Object.keys(parsed.services), Object.keys(expected), "Services in the order first met");
    for (const service of Object.keys(expected))
      assert.deepEqual(parsed.services[service], expected[service], service);
    assert.deepEqual(parsed.unlisted, unlisted);
    const loaded = await state.load();
    assert.equal(loaded.problem, undefined);
    assert.equal(loaded.invalid, 0);
  });

  test("a version 1 file loads: an upgrade keeps its state", async () => {
    const state = new StateFile(await scratch());
    await writeFile(
      state.path,
      JSON.stringify({
        version: 1,
        savedAt: "2025-01-01T00:00:00.000Z",
        backends: [
          { address: "10.0.0.1", port: 53, protocol: "udp", services: [dns] },
          { address: "fd00::5", port: 53, protocol: "tcp", services: [] },
          // The mapped form was keyed apart before; now it is the IPv4 backend, services merged.
          { address: "::ffff:10.0.0.1", port: 53, protocol: "udp", services: ["ns/mapped", dns] },
          { address: "10.0.0.3", port: 80, protocol: "tcp" },
        ],
      }),
    );
    assert.deepEqual(await loadTexts(state), {
      backends: new Map([
        ["10.0.0.1:53/udp", [dns, "ns/mapped"]],
        ["[fd00::5]:53/tcp", []],
        ["10.0.0.3:80/tcp", []],
      ]),
      invalid: 0,
    });
  });

  test("an unusable file is reported, not thrown; invalid entries are counted and left out", async () => {
    const state = new StateFile(await scratch());
    await writeFile(state.path, "{ not json");
    const broken = await loadTexts(state);
    assert.deepEqual(broken.backends, new Map());
    assert.match(broken.problem ?? "", /not JSON/);
    for (const body of [{ version: 7, backends: [] }, { version: 2, services: [] }, { version: 2 }]) {
      await writeFile(state.path, JSON.stringify(body));
      assert.match((await loadTexts(state)).problem ?? "", /not a version 1 or 2 state file/);
    }
    for (const body of [null, [1]]) {
      await writeFile(state.path, JSON.stringify(body));
      assert.match((await loadTexts(state)).problem ?? "", /is not a JSON object$/);
    }
    const twice = '{"version":2,"services":{},"unlisted":[],"services":{}}';
    await writeFile(state.path, twice);
    assert.match((await loadTexts(state)).problem ?? "", /has "services" twice$/);
    await writeFile(
      state.path,
      JSON.stringify({
        version: 1,
        backends: [
          { address: "10.0.0.1", port: 53, protocol: "udp", services: [dns, 7] },
          { address: "10.0.0.300", port: 53, protocol: "udp" },
          { address: "10.0.0.2", port: 0, protocol: "udp" },
          { address: "10.0.0.2", port: 53, protocol: "sctp" },
        ],
      }),
    );
    assert.deepEqual(await loadTexts(state), { backends: new Map([[a.key, [dns]]]), invalid: 3 });
    await writeFile(
      state.path,
      JSON.stringify({
        version: 2,
        services: {
          [dns]: [a.key, "10.0.0.1:0/udp", "[::ffff:10.0.0.1]:53/udp", "[FD00::5]:53/udp", 12, null],
          "ns/broken": "10.0.0.4:53/udp",
        },
        unlisted: [b.key, "10.0.0.5:53/sctp"],
      }),
    );
    assert.deepEqual(await loadTexts(state), {
      backends: new Map([
        [a.key, [dns]],
        [b.key, []],
      ]),
      invalid: 7,
    });
  });

  test("maxBytes: a larger file is a problem and is not read", async () => {
    assert.throws(() => new StateFile("/x", { maxBytes: 0 }), RangeError);
    const dir = await scratch();
    const state = new StateFile(dir, { maxBytes: 1024 });
    await state.save(groups([a]));
    assert.equal((await loadTexts(state)).backends.size, 1);
    const exact = JSON.stringify({ version: 2, services: {}, unlisted: [] });
    await writeFile(state.path, exact.padEnd(1024, " "));
    assert.deepEqual(await loadTexts(state), { backends: new Map(), invalid: 0 });
    await writeFile(state.path, exact.padEnd(1025, " "));
    assert.match((await loadTexts(state)).problem ?? "", /is 1025 bytes, more than the 1024 read at most/);
    // 512 MiB, sparse: reading it would show in the process's memory.
    const big = 512 * 1024 * 1024;
    await truncate(state.path, big);
    const before = process.memoryUsage();
    const loaded = await loadTexts(state);
    const grown = process.memoryUsage();
    assert.match(loaded.problem ?? "", new RegExp(`is ${big} bytes, more than the 1024 read at most`));
    assert.ok(grown.rss - before.rss < big / 4, `rss grew by ${grown.rss - before.rss}`);
    assert.ok(grown.arrayBuffers - before.arrayBuffers < big / 4, "array buffers grew");
    assert.ok(grown.heapUsed - before.heapUsed < big / 4, "heap grew");
  });

  test("a symbolic link planted at backends.json is not followed to read, nor to write", async () => {
    const dir = await scratch();
    const target = await victim();
    const state = new StateFile(dir);
    await symlink(target, state.path);
    const loaded = await loadTexts(state);
    assert.deepEqual(loaded.backends, new Map());
    assert.match(loaded.problem ?? "", /is a symbolic link; not followed/);
    await state.save(groups([a]));
    assert.equal(await readFile(target, "utf8"), "precious\n", "the link's target was written");
    assert.ok((await lstat(state.path)).isFile(), "rename replaces the link itself");
    assert.deepEqual([...(await loadTexts(state)).backends.keys()], [a.key]);
  });

  test("a FIFO or a directory at backends.json is a problem, and load does not hang", async () => {
    const dir = await scratch();
    const state = new StateFile(dir);
    execFileSync("mkfifo", [state.path]);
    assert.match((await loadTexts(state)).problem ?? "", /is not a regular file/);
    await rm(state.path);
    await mkdir(state.path);
    assert.match((await loadTexts(state)).problem ?? "", /is not a regular file/);
  });

  test("the temporary file: a random name, never through a planted link", async () => {
    const dir = await scratch();
    const target = await victim();
    const state = new StateFile(dir);
    // Every name one could guess: the old pid-based one, and some random-looking ones.
    const planted = [
      `.backends.json.${process.pid}.tmp`,
      ...Array.from({ length: 8 }, (_, i) => `.backends.json.${String(i).repeat(32)}.tmp`),
      ".backends.json.tmp",
    ];
    for (const name of planted) await symlink(target, join(dir, name));
    const names = new Set<string>();
    for (let i = 0; i < 5; i++) {
      await state.save(groups([a]));
      assert.equal(await readFile(target, "utf8"), "precious\n");
    }
    for (const name of planted)
      assert.equal(await readlink(join(dir, name)), target, "a planted link was touched");
    assert.deepEqual((await readdir(dir)).sort(), ["backends.json", ...planted].sort());
    // The names differ from save to save (seen through a link that would fail the open).
    const seen = mock.method(crypto, "randomBytes");
    syncBuiltinESMExports();
    try {
      for (let i = 0; i < 3; i++) await state.save(groups([a]));
      for (const call of seen.mock.calls) names.add((call.result as unknown as Buffer).toString("hex"));
    } finally {
      seen.mock.restore();
      syncBuiltinESMExports();
    }
    assert.equal(names.size, 3);
    for (const name of names) assert.match(name, /^[0-9a-f]{32}$/);
  });

  test("the temporary file is created exclusively: whatever holds its name makes the save fail", async () => {
    const dir = await scratch();
    const target = await victim();
    const state = new StateFile(dir);
    await state.save(groups([a]));
    const fixed = Buffer.alloc(16, 0xab);
    const name = `.backends.json.${fixed.toString("hex")}.tmp`;
    const random = mock.method(crypto, "randomBytes", () => Buffer.from(fixed));
    syncBuiltinESMExports();
    try {
      await symlink(target, join(dir, name));
      await assert.rejects(state.save(groups([b])), { code: "EEXIST" });
      assert.equal(await readFile(target, "utf8"), "precious\n");
      assert.equal(await readlink(join(dir, name)), target, "the planted link was removed or changed");
      // Even a dangling link: O_EXCL with O_NOFOLLOW does not create its target.
      await rm(join(dir, name));
      const dangling = join(await scratch(), "would-be-created");
      await symlink(dangling, join(dir, name));
      await assert.rejects(state.save(groups([b])), { code: "EEXIST" });
      await assert.rejects(lstat(dangling), { code: "ENOENT" });
      // A plain file too (O_EXCL), left as it was.
      await rm(join(dir, name));
      await writeFile(join(dir, name), "theirs");
      await assert.rejects(state.save(groups([b])), { code: "EEXIST" });
      assert.equal(await readFile(join(dir, name), "utf8"), "theirs");
    } finally {
      random.mock.restore();
      syncBuiltinESMExports();
    }
    assert.deepEqual(
      [...(await loadTexts(state)).backends.keys()],
      [a.key],
      "a failed save changed the state",
    );
    await rm(join(dir, name));
    await state.save(groups([b]));
    assert.deepEqual([...(await loadTexts(state)).backends.keys()], [b.key]);
  });

  test("a save that fails after making the temporary file removes it", async () => {
    const dir = await scratch();
    const state = new StateFile(dir);
    // rename cannot replace a directory that is not empty.
    await mkdir(join(state.path, "x"), { recursive: true });
    await assert.rejects(state.save(groups([a])));
    assert.deepEqual(await readdir(dir), ["backends.json"]);
    await rm(state.path, { recursive: true });
    await state.save(groups([a]));
    assert.equal((await loadTexts(state)).backends.size, 1);
  });
});

describe("StateFile.prepare", () => {
  async function refused(dir: string, reason: RegExp): Promise<void> {
    await assert.rejects(new StateFile(dir).prepare(), (err: unknown) => {
      assert.ok(err instanceof StateDirError);
      assert.equal(err.path, dir);
      assert.equal(err.code, "ERR_SOCKDIAG_AGENT_STATE_DIR");
      assert.ok(err.message.startsWith(`state directory ${dir}: `), err.message);
      assert.match(err.message, reason);
      return true;
    });
  }

  test("a directory writable by group or others is refused", async () => {
    const dir = await scratch();
    await chmod(dir, 0o777);
    await refused(dir, /is writable by group or others \(mode 0777\)/);
    await chmod(dir, 0o1777);
    await refused(dir, /is writable by group or others \(mode 1777\)/);
    await chmod(dir, 0o770);
    await refused(dir, /is writable by group or others \(mode 0770\)/);
    await chmod(dir, 0o755);
    await new StateFile(dir).prepare();
  });

  test("a directory owned by another uid is refused", async (t) => {
    if (process.geteuid?.() !== 0) return t.skip("needs root to chown");
    const dir = await scratch();
    await chmod(dir, 0o700);
    await chown(dir, 65534, 65534);
    await refused(dir, /is owned by uid 65534, not by this process \(uid 0\)/);
  });

  test("a symbolic link to a directory, a file, or a path that cannot be made is refused", async () => {
    const base = await scratch();
    const real = join(base, "real");
    await mkdir(real, { mode: 0o700 });
    await symlink(real, join(base, "link"));
    await refused(join(base, "link"), /is a symbolic link/);
    await writeFile(join(base, "file"), "");
    await refused(join(base, "file"), /is not a directory/);
    await refused(join(base, "file", "state"), /cannot be made or examined: ENOTDIR/);
  });
});

/** The i-th of many distinct addresses (i below 2^24), IPv6 as it is written in a backend key when asked. */
function distinctAddress(i: number, ipv6: boolean): string {
  return ipv6
    ? `[fd00::${(i >> 16) + 1}:${(i & 0xffff).toString(16)}]`
    : `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}
