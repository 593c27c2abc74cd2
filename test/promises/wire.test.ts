/**
 * The promises wire: sockets written back into their messages in a chunk, and read out of it on
 * the other side, come out equal to what went in, attributes and all.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { INET_DIAG_MSG_LEN, InetSocket, type Socket, writeInetDiagMsg } from "../../src/diag/socket.js";
import { ChunkWriter, readChunk } from "../../src/promises/wire.js";
import { arbitraryInetSocket } from "../diag/arbitraries.js";

function across(sockets: Socket[]): unknown[] {
  const writer = new ChunkWriter();
  for (const s of sockets) writer.add(s);
  const out: unknown[] = [];
  readChunk(writer.take(), (item) => out.push(item));
  return out;
}

test("every fixed field of random inet sockets crosses unchanged, as InetSockets", () => {
  fc.assert(
    fc.property(fc.array(arbitraryInetSocket, { minLength: 1, maxLength: 40 }), (sockets) => {
      const back = across(sockets);
      assert.deepStrictEqual(back, sockets);
      assert.ok(back.every((s) => s instanceof InetSocket));
    }),
    { numRuns: 200 },
  );
});

test("decoded attributes cross with the socket, and a socket without them gains none", () => {
  const [plain, marked] = fc.sample(arbitraryInetSocket, 2) as [InetSocket, InetSocket];
  marked.mark = 0x2a;
  marked.cgroupId = 1n << 40n;
  marked.meminfo = { rmem: 1, wmem: 2, fmem: 3, tmem: 4 };
  marked.rawProtocol = 17;
  const back = across([plain, marked]) as InetSocket[];
  assert.deepStrictEqual(back, [plain, marked]);
  assert.equal(back[0]!.hasAttributes, false);
});

test("kernel messages forwarded as they are cross as the sockets they encode, among other items", () => {
  fc.assert(
    fc.property(fc.array(arbitraryInetSocket, { minLength: 1, maxLength: 40 }), fc.nat(7), (sockets, pad) => {
      // Each message where a receive buffer holds it: after other bytes, followed by attributes.
      const buf = Buffer.alloc(pad + INET_DIAG_MSG_LEN + 16, 0xa5);
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      const writer = new ChunkWriter();
      const plain = { family: "plain", n: 1 };
      for (const s of sockets) {
        writeInetDiagMsg(view, pad, s);
        writer.addInetMessage(buf, pad, s.protocol, s.netns);
        writer.add(plain);
      }
      const back: unknown[] = [];
      readChunk(writer.take(), (item) => back.push(item));
      assert.deepStrictEqual(
        back,
        sockets.flatMap((s) => [s, plain]),
      );
    }),
    { numRuns: 200 },
  );
});
