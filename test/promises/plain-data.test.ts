/**
 * Sockets are plain data: structuredClone, spreading, postMessage and JSON keep every field (the
 * cookie a bigint, except in JSON where it is a decimal string); and sockdiag/promises lets an idle
 * process exit. Listing the caller's own namespace needs no privilege.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import { type InetSocket, listSockets } from "sockdiag";
import { ChunkWriter, readChunk } from "../../src/promises/wire.js";

let server: Server;
let port: number;

before(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

after(() => {
  server.close();
});

const listed = () => {
  const [s] = listSockets({
    protocols: ["tcp"],
    states: ["listening"],
    filter: `src 127.0.0.1:${port}`,
    extensions: ["tcpinfo", "skmem"],
  });
  assert.ok(s, "the listener is listed");
  return s;
};

test("structuredClone and spreading keep every field", () => {
  const s = listed();
  const fields = { ...s };
  for (const key of [
    "netns",
    "family",
    "protocol",
    "state",
    "src",
    "sport",
    "dst",
    "dport",
    "cookie",
    "inode",
    "tcpinfo",
  ])
    assert.ok(key in fields, key);
  assert.equal(typeof fields.cookie, "bigint");
  assert.equal(fields.sport, port);
  assert.deepStrictEqual(structuredClone(s), fields);
});

test("postMessage keeps every field", async () => {
  const s = listed();
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<unknown>((resolve) => port2.once("message", resolve));
  port1.postMessage(s);
  const got = await received;
  port1.close();
  port2.close();
  assert.deepStrictEqual(got, { ...s });
});

test("JSON keeps every field, the cookie in decimal", () => {
  const s = listed();
  const json = JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
  assert.equal(json.cookie, s.cookie.toString());
  assert.equal(json.sport, s.sport);
  assert.equal(json.src, "127.0.0.1");
  for (const key of Object.keys(s)) assert.ok(key in json, key);
});

const PROMISES = new URL("../../src/promises/index.js", import.meta.url).href;
const SYNC = new URL("../../src/index.js", import.meta.url).href;

/** Run `script` (an ES module) in a node of its own; it must exit by itself, with status 0. */
function runAlone(script: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "sdt-alone-"));
  const file = join(dir, "script.mjs");
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { timeout: 20_000, encoding: "utf8" });
  rmSync(dir, { recursive: true });
  assert.equal(r.error, undefined, "exited by itself");
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split("\n");
}

test("an idle sockdiag/promises worker does not keep the process alive", () => {
  const out = runAlone(`const p = await import(${JSON.stringify(PROMISES)});
    console.log((await p.listSockets()).length >= 0);`);
  assert.deepEqual(out, ["true"]);
});

test("a socket whose address was changed is refused with QueryError naming it, and the process still exits", () => {
  const [refusal, listedAfter] = runAlone(`
    const p = await import(${JSON.stringify(PROMISES)});
    const { listSockets } = await import(${JSON.stringify(SYNC)});
    const [s] = listSockets({ protocols: ["tcp"], states: ["listening"], filter: "sport = :${port}" });
    s.src = "localhost";
    const err = await p.destroySocket(s).then(() => undefined, (e) => e);
    console.log(err?.name, err?.message);
    console.log((await p.listSockets()).length >= 0);`);
  assert.match(refusal!, /^QueryError .*src.*"localhost".*not an IPv4 address/);
  assert.equal(listedAfter, "true");
});

test("a listed TCP listener with tcp_info and skmem crosses the promises wire unchanged", () => {
  const s = listed();
  assert.ok((s as InetSocket).tcpinfo, "tcp_info was decoded");
  const writer = new ChunkWriter();
  writer.add(s);
  const back: unknown[] = [];
  readChunk(writer.take(), (item) => back.push(item));
  assert.deepStrictEqual(back, [s]);
});
