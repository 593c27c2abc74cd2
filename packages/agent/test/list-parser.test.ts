/** ListParser: list answers read as they stream, item by item, within bounds. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AnswerTooLargeError, BrokenAnswerError, ListParser } from "../src/list-parser.js";
import { TurnCounter } from "./kit/turns.js";

const WIDE = { maxItemBytes: 1 << 20, maxAnswerBytes: 1 << 24 };

/** Parse `chunks` in order; the items and what end() says. */
function parseChunks(chunks: readonly Buffer[], bounds = WIDE) {
  const items: unknown[] = [];
  const parser = new ListParser((item) => items.push(item), bounds);
  for (const c of chunks) parser.write(c);
  return { items, ...parser.end() };
}

// Strings hold every character the tokenizer looks at, escaped quotes and backslashes, and
// characters of two, three and four bytes; an item holds nested arrays; metadata comes after items.
const tricky = {
  kind: "EndpointSliceList",
  apiVersion: "discovery.k8s.io/v1",
  items: [
    {
      metadata: { name: 'a",[]{}\\', annotations: { x: '\\"}]' } },
      endpoints: [{ addresses: ["10.0.0.1"] }],
    },
    { metadata: { name: "café-ü-€-𝄞" }, ports: [[1, [2, [3]]], {}] },
    "a string item",
    42,
    null,
    { metadata: {} },
  ],
  metadata: { resourceVersion: "12", continue: "tok" },
};

describe("ListParser", () => {
  test("every split into two chunks, and one byte at a time, reads the same items and envelope as JSON.parse", () => {
    for (const text of [JSON.stringify(tricky), JSON.stringify(tricky, null, 2)]) {
      const whole = Buffer.from(text);
      const { items: _i, ...envelope } = tricky;
      const expected = { items: tricky.items, members: envelope, itemsSeen: true };
      for (let cut = 0; cut <= whole.length; cut++)
        assert.deepEqual(
          parseChunks([whole.subarray(0, cut), whole.subarray(cut)]),
          expected,
          `cut at ${cut}`,
        );
      const bytes = [...whole].map((b) => Buffer.from([b]));
      assert.deepEqual(parseChunks(bytes), expected);
    }
  });

  test("each item goes out as soon as it is read, before the answer ends", () => {
    const items: unknown[] = [];
    const parser = new ListParser((item) => items.push(item), WIDE);
    parser.write(Buffer.from('{"metadata":{"resourceVersion":"1"},"items":[{"n":1},{"n":'));
    assert.deepEqual(items, [{ n: 1 }]);
    parser.write(Buffer.from("2}"));
    assert.deepEqual(items, [{ n: 1 }], "an item ends at its separator");
    parser.write(Buffer.from("]}"));
    assert.deepEqual(items, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(parser.end(), { members: { metadata: { resourceVersion: "1" } }, itemsSeen: true });
  });

  test("read: one chunk of megabytes is parsed with turns of the event loop between its pieces", async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => ({ n, pad: "x".repeat(100) }));
    const whole = Buffer.from(JSON.stringify({ metadata: { resourceVersion: "1" }, items }));
    const read: number[] = [];
    const loop = new TurnCounter();
    const parser = new ListParser(() => read.push(loop.turns), WIDE);
    await parser.read(
      (async function* () {
        yield whole;
      })(),
      new AbortController().signal,
    );
    loop.stop();
    assert.equal(read.length, items.length);
    assert.ok(read.at(-1)! > read[0]!, "the event loop turned between the first item and the last");
    assert.deepEqual(parser.end(), { members: { metadata: { resourceVersion: "1" } }, itemsSeen: true });
    const stopped = new AbortController();
    const cut = new ListParser(() => stopped.abort(), WIDE).read(
      (async function* () {
        yield whole;
      })(),
      stopped.signal,
    );
    await assert.rejects(cut, { name: "AbortError" }, "an abort stops the parse at its next turn");
  });

  test("read: chunks the stream holds already are parsed with a turn of the event loop every 64 KiB", async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => ({ n, pad: "x".repeat(100) }));
    const whole = Buffer.from(JSON.stringify({ metadata: { resourceVersion: "1" }, items }));
    const itemBytes = JSON.stringify(items[0]).length + 1;
    const readIn = new Map<number, number>();
    const loop = new TurnCounter();
    const parser = new ListParser(() => readIn.set(loop.turns, (readIn.get(loop.turns) ?? 0) + 1), WIDE);
    // 16 KiB chunks, each there at once (a promise apart), as a socket's buffered reads come.
    await parser.read(
      (async function* () {
        for (let at = 0; at < whole.length; at += 16 * 1024) yield whole.subarray(at, at + 16 * 1024);
      })(),
      new AbortController().signal,
    );
    loop.stop();
    assert.equal(
      [...readIn.values()].reduce((a, b) => a + b),
      items.length,
    );
    const most = Math.max(...readIn.values());
    assert.ok(most <= (64 * 1024) / itemBytes + 1, `${most} items parsed in one turn`);
  });

  test("an empty list, and an answer with no items array", () => {
    assert.deepEqual(parseChunks([Buffer.from('{"items":[ ],"metadata":{}}')]), {
      items: [],
      members: { metadata: {} },
      itemsSeen: true,
    });
    assert.deepEqual(parseChunks([Buffer.from('{"items":{"a":1}}')]), {
      items: [],
      members: { items: { a: 1 } },
      itemsSeen: false,
    });
  });

  test("an item over its bound is refused while it streams, holding no more than the bound and a chunk", () => {
    const parser = new ListParser(() => {}, { maxItemBytes: 10_000, maxAnswerBytes: 1 << 30 });
    parser.write(Buffer.from('{"items":[{"x":"'));
    const chunk = Buffer.alloc(4096, "a");
    let written = 0;
    assert.throws(
      () => {
        for (;;) {
          parser.write(chunk);
          written += chunk.length;
        }
      },
      (err: unknown) =>
        err instanceof AnswerTooLargeError && err.bound === "object" && err.limitBytes === 10_000,
    );
    assert.ok(written <= 10_000, `refused after ${written} bytes`);
  });

  test("an answer over its bound is refused at the chunk that crosses it, whatever its items", () => {
    const parser = new ListParser(() => {}, { maxItemBytes: 100, maxAnswerBytes: 50_000 });
    parser.write(Buffer.from('{"items":['));
    const chunk = Buffer.from(`${'{"n":1},'.repeat(1000)}`);
    assert.throws(
      () => {
        for (let i = 0; i < 100; i++) parser.write(chunk);
      },
      (err: unknown) => err instanceof AnswerTooLargeError && err.bound === "answer",
    );
  });

  test("broken answers: not an object, an item not JSON, cut short, more after the end", () => {
    const broken = (text: string) =>
      assert.throws(() => parseChunks([Buffer.from(text)]), BrokenAnswerError, JSON.stringify(text));
    broken("[1,2]");
    broken("x");
    broken('{"items":[{"a":1},{b}]}');
    broken('{"items":[{"a":1}');
    broken('{"items":[], "metadata": {"resourceVersion": "1"}');
    broken('{"items":[]}{"items":[]}');
    broken('{"items":[],"metadata":{"a":1,}}');
  });
});
