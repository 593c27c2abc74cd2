/** ObjectStream: list answers (and state files) read as they stream, piece by piece, within bounds. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AnswerTooLargeError, BrokenAnswerError, ObjectStream } from "../src/object-stream.js";
import { TurnCounter } from "./kit/turns.js";

const WIDE = { maxPieceBytes: 1 << 20, maxBytes: 1 << 24 };

/** A list answer's stream, as kube-api reads one: each item to `onItem`. */
function listStream(onItem: (item: unknown) => void, bounds = WIDE): ObjectStream {
  return new ObjectStream((_items, item) => onItem(item), {
    what: "the list answer",
    streamed: { items: "[" },
    ...bounds,
  });
}

/** What end() says, with `itemsSeen` for the items array streamed. */
function ended(stream: ObjectStream) {
  const { members, streamed } = stream.end();
  return { members, itemsSeen: streamed.has("items") };
}

/** Parse `chunks` in order; the items and what end() says. */
function parseChunks(chunks: readonly Buffer[], bounds = WIDE) {
  const items: unknown[] = [];
  const stream = listStream((item) => items.push(item), bounds);
  for (const c of chunks) stream.write(c);
  return { items, ...ended(stream) };
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

describe("ObjectStream", () => {
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
    const stream = listStream((item) => items.push(item));
    stream.write(Buffer.from('{"metadata":{"resourceVersion":"1"},"items":[{"n":1},{"n":'));
    assert.deepEqual(items, [{ n: 1 }]);
    stream.write(Buffer.from("2}"));
    assert.deepEqual(items, [{ n: 1 }], "an item ends at its separator");
    stream.write(Buffer.from("]}"));
    assert.deepEqual(items, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(ended(stream), { members: { metadata: { resourceVersion: "1" } }, itemsSeen: true });
  });

  test("read: one chunk of megabytes is parsed with turns of the event loop between its pieces", async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => ({ n, pad: "x".repeat(100) }));
    const whole = Buffer.from(JSON.stringify({ metadata: { resourceVersion: "1" }, items }));
    const read: number[] = [];
    const loop = new TurnCounter();
    const stream = listStream(() => read.push(loop.turns));
    await stream.read(
      (async function* () {
        yield whole;
      })(),
      new AbortController().signal,
    );
    loop.stop();
    assert.equal(read.length, items.length);
    assert.ok(read.at(-1)! > read[0]!, "the event loop turned between the first item and the last");
    assert.deepEqual(ended(stream), { members: { metadata: { resourceVersion: "1" } }, itemsSeen: true });
    const stopped = new AbortController();
    const cut = listStream(() => stopped.abort()).read(
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
    const stream = listStream(() => readIn.set(loop.turns, (readIn.get(loop.turns) ?? 0) + 1));
    // 16 KiB chunks, each there at once (a promise apart), as a socket's buffered reads come.
    await stream.read(
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
    const stream = listStream(() => {}, { maxPieceBytes: 10_000, maxBytes: 1 << 30 });
    stream.write(Buffer.from('{"items":[{"x":"'));
    const chunk = Buffer.alloc(4096, "a");
    let written = 0;
    assert.throws(
      () => {
        for (;;) {
          stream.write(chunk);
          written += chunk.length;
        }
      },
      (err: unknown) =>
        err instanceof AnswerTooLargeError && err.bound === "object" && err.limitBytes === 10_000,
    );
    assert.ok(written <= 10_000, `refused after ${written} bytes`);
  });

  test("an answer over its bound is refused at the chunk that crosses it, whatever its items", () => {
    const stream = listStream(() => {}, { maxPieceBytes: 100, maxBytes: 50_000 });
    stream.write(Buffer.from('{"items":['));
    const chunk = Buffer.from(`${'{"n":1},'.repeat(1000)}`);
    assert.throws(
      () => {
        for (let i = 0; i < 100; i++) stream.write(chunk);
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
    // What JSON.parse refuses between the pieces: empty elements, brackets that do not match,
    // anything after a streamed member's value or after the end.
    for (const text of [
      '{"items":[1,,2]}',
      '{"items":[,]}',
      '{"items":[1,]}',
      "{,}",
      '{"a":1,}',
      '{"items":[1,]',
    ])
      broken(text);
    for (const text of [
      '{"items":[1}}',
      '{"items":[1]]',
      '{"a":1]',
      '{"items":[] 5}',
      '{"metadata":{} "items":[]}',
      '{"items":[] "k":[]}',
      '{"items":[]"x"}',
      '{}""',
    ])
      broken(text);
    // White space that is not JSON's, where only white space may be.
    for (const text of ['{"items":[]}\u000b', '{"items":[]\u000b}', '\u00a0{"items":[]}', '{"items":[1]}x'])
      broken(text);
    assert.throws(() => parseChunks([Buffer.from('{"items":[1],"items":[2]}')]), /has "items" twice/);
  });

  test("every cut and every one-byte change of an object: refused exactly when JSON.parse refuses it", () => {
    const original = Buffer.from(
      JSON.stringify({
        metadata: { n: 1, m: [] },
        items: [{ a: [1, { b: '"]' }] }, "x\\y", 2, [], {}],
        k: "v",
      }),
    );
    const texts: Buffer[] = [];
    for (let cut = 0; cut < original.length; cut++) texts.push(original.subarray(0, cut));
    for (let at = 0; at < original.length; at++)
      for (const c of '\x01]},:"\\ 0e-[{n\u00e9') {
        const changed = Buffer.from(original);
        changed[at] = Buffer.from(c)[0]!;
        texts.push(changed, Buffer.concat([original.subarray(0, at), Buffer.from(c), original.subarray(at)]));
      }
    /** The object read back: its members, an array or object streamed made of its pieces again. */
    const readBack = (text: Buffer) => {
      const items: unknown[] = [];
      const metadata: Record<string, unknown> = {};
      const stream = new ObjectStream(
        (member, piece) => {
          if (member === "items") items.push(piece);
          else Object.assign(metadata, piece);
        },
        { what: "the object", streamed: { items: "[", metadata: "{" }, ...WIDE },
      );
      stream.write(text);
      const { members, streamed } = stream.end();
      return {
        ...members,
        ...(streamed.has("items") ? { items } : {}),
        ...(streamed.has("metadata") ? { metadata } : {}),
      };
    };
    let refused = 0;
    for (const text of texts) {
      const shown = JSON.stringify(text.toString("latin1"));
      let whole: unknown;
      try {
        whole = JSON.parse(text.toString("utf8"));
      } catch {
        refused++;
        assert.throws(() => readBack(text), BrokenAnswerError, shown);
        continue;
      }
      if (typeof whole !== "object" || whole === null || Array.isArray(whole))
        assert.throws(() => readBack(text), /is not a JSON object$/, shown);
      else assert.deepEqual(readBack(text), whole, shown);
    }
    assert.ok(refused > texts.length / 2, `${refused} of ${texts.length} refused`);
  });

  test("a streamed object: its members go out one by one, as objects of one member", () => {
    const pieces: [string, unknown][] = [];
    const stream = new ObjectStream((member, piece) => pieces.push([member, piece]), {
      what: "the file",
      streamed: { services: "{", unlisted: "[" },
      ...WIDE,
    });
    stream.write(Buffer.from('{"version":2,"services":{"a/b":["k1","k2"], "c/d" : [] },"unlisted":["k3"]}'));
    assert.deepEqual(pieces, [
      ["services", { "a/b": ["k1", "k2"] }],
      ["services", { "c/d": [] }],
      ["unlisted", "k3"],
    ]);
    assert.deepEqual(stream.end(), { members: { version: 2 }, streamed: new Set(["services", "unlisted"]) });
    // After a streamed member's value, nothing but a comma or the end (not another streamed member).
    const next = new ObjectStream(() => {}, {
      what: "the file",
      streamed: { services: "{", unlisted: "[" },
      ...WIDE,
    });
    assert.throws(() => next.write(Buffer.from('{"services":{} "unlisted":[]}')), /more after a streamed/);
    const other = new ObjectStream(() => assert.fail("nothing streamed"), {
      what: "the file",
      streamed: { services: "{" },
      ...WIDE,
    });
    other.write(Buffer.from('{"services":["a"]}'));
    assert.deepEqual(other.end(), { members: { services: ["a"] }, streamed: new Set() });
  });
});
