/**
 * The CLI's JSON byte writer must print exactly what JSON.stringify prints for the same sockets
 * (the model's toJSON is the contract); checked on random sockets of every shape.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { writeJson } from "../../src/cli/render/index.js";
import { type Socket, UnixSocket } from "../../src/diag/socket.js";
import type { SocketOwner } from "../../src/sockets/index.js";
import { arbitraryInetSocket } from "../diag/arbitraries.js";
import { socketFromWords } from "../kit/socket-words.js";
import { repeatingInetSockets } from "./repeating-sockets.js";

const u32 = fc.integer({ min: 0, max: 0xffffffff });

const inetSocket = fc.tuple(arbitraryInetSocket, fc.option(u32, { nil: undefined })).map(([s, mark]) => {
  if (mark !== undefined) s.mark = mark; // an attribute: JSON takes the general path
  return s as Socket;
});

const unixSocket = fc.record({ inode: u32, name: fc.option(fc.string(), { nil: undefined }) }).map((r) => {
  const s = new UnixSocket("stream", 0, r.inode, 0n);
  if (r.name !== undefined) s.name = r.name;
  return s as Socket;
});

/** What the CLI prints for a socket: its toJSON, with the caller's own namespace (null) named "(host)". */
const stringify = (s: unknown) => JSON.stringify(s, (k, v) => (k === "netns" && v === null ? "(host)" : v));

function written(sockets: Socket[], format: "json" | "ndjson", owners?: Map<number, SocketOwner[]>): string {
  const chunks: Uint8Array[] = [];
  writeJson(sockets, format, (c) => chunks.push(Buffer.from(c)), { owners });
  return Buffer.concat(chunks).toString("utf8");
}

test("-j output equals JSON.stringify of the same sockets, the caller's namespace named (host)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof({ arbitrary: inetSocket, weight: 5 }, unixSocket), { maxLength: 20 }),
      (sockets) => {
        const text = written(sockets, "json");
        assert.deepEqual(JSON.parse(text), JSON.parse(stringify(sockets)));
        assert.equal(text, sockets.length === 0 ? "[]\n" : `[\n${sockets.map(stringify).join(",\n")}\n]\n`);
      },
    ),
    { numRuns: 300 },
  );
});

test("neighbours sharing some fields print exactly as JSON.stringify prints each of them", () => {
  fc.assert(
    fc.property(repeatingInetSockets, (sockets) => {
      const lines = written(sockets, "ndjson").split("\n");
      assert.equal(lines.pop(), "");
      assert.deepEqual(lines, sockets.map(stringify));
    }),
    { numRuns: 300 },
  );
});

test("--ndjson is one JSON.stringify per line; -p adds owners last", () => {
  fc.assert(
    fc.property(fc.array(inetSocket, { minLength: 1, maxLength: 10 }), (sockets) => {
      const owners = new Map([[sockets[0]!.inode, [{ pid: 1, command: 'a "b"', fd: 3 }]]]);
      const lines = written(sockets, "ndjson", owners).split("\n");
      assert.equal(lines.pop(), "");
      lines.forEach((line, i) => {
        const expected = {
          ...JSON.parse(stringify(sockets[i])),
          owners: owners.get(sockets[i]!.inode) ?? [],
        };
        assert.equal(line, JSON.stringify(expected));
      });
    }),
    { numRuns: 100 },
  );
});

for (const reuseBuffer of [false, true])
  test(`a listing larger than one write chunk is written in several chunks that join into its JSON${reuseBuffer ? ", one buffer reused" : ""}`, () => {
    const sockets = Array.from({ length: 12_000 }, (_, i) => {
      return socketFromWords({
        family: "inet",
        protocol: "udp",
        sport: i % 65536,
        dport: 0,
        srcWords: [],
        dstWords: [],
        cookie: 0n,
        inode: i,
      }) as Socket;
    });
    const chunks: Uint8Array[] = [];
    writeJson(sockets, "json", (c) => chunks.push(Buffer.from(c)), { reuseBuffer });
    assert.ok(chunks.length > 1);
    assert.equal(Buffer.concat(chunks).toString(), `[\n${sockets.map(stringify).join(",\n")}\n]\n`);
  });
