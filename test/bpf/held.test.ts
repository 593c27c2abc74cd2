/**
 * HeldCount over records laid out as the program writes them: each socket once by inode number,
 * under its namespace and family, across reads that end anywhere, stopping at a found record; and
 * of those, the ones a second pass's inode numbers name, each once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { HeldCount } from "../../src/bpf/held.js";
import { Record, RecordKind } from "../../src/bpf/record.js";
import { AF_INET, AF_INET6 } from "../../src/sys/index.js";

interface Held {
  netns: number;
  family: number;
  inode: number;
}

/** The records in host order, as bpf_seq_write gives them; `found` is a found record's place. */
function laid(held: readonly Held[], found: number): Buffer {
  const out = Buffer.from(new ArrayBuffer(held.length * Record.heldSize + Record.size));
  const halves = new Uint16Array(out.buffer);
  const words = new Uint32Array(out.buffer);
  let at = 0;
  held.forEach((record, i) => {
    if (i === found) {
      halves[(at + Record.kind) >>> 1] = RecordKind.found;
      at += Record.size;
    }
    halves[(at + Record.kind) >>> 1] = RecordKind.held;
    halves[(at + Record.family) >>> 1] = record.family;
    words[(at + Record.netns) >>> 2] = record.netns;
    words[(at + Record.inode) >>> 2] = record.inode;
    at += Record.heldSize;
  });
  return out;
}

test("each socket counts once under its namespace and family, read in pieces", () => {
  const held: Held[] = [];
  // Two namespaces in turns, runs of consecutive inode numbers, some held twice.
  for (let i = 0; i < 5000; i++) {
    const netns = i % 1000 < 500 ? 0xf0000001 : 0xf0000002;
    held.push({ netns, family: i % 3 === 0 ? AF_INET6 : AF_INET, inode: 1_000_000 + i });
    if (i % 11 === 0) held.push({ netns, family: i % 3 === 0 ? AF_INET6 : AF_INET, inode: 1_000_000 + i });
  }
  const expected = new Map<number, { v4: number; v6: number }>();
  const seen = new Set<number>();
  for (const { netns, family, inode } of held) {
    if (seen.has(inode)) continue;
    seen.add(inode);
    const tally = expected.get(netns) ?? { v4: 0, v6: 0 };
    expected.set(netns, tally);
    if (family === AF_INET6) tally.v6++;
    else tally.v4++;
  }
  const found = 2345;
  const bytes = laid(held, found);
  const foundAt = found * Record.heldSize;
  for (const piece of [Record.heldSize, 1000, 4096, bytes.length]) {
    const count = new HeldCount();
    // As readIterator hands reads over: a buffer of its own, what was not taken first.
    const buffer = Buffer.from(new ArrayBuffer(piece + Record.size));
    const halves = new Uint16Array(buffer.buffer);
    const words = new Uint32Array(buffer.buffer);
    let kept = 0;
    let stops = 0;
    for (let from = 0; from < bytes.length; from += piece) {
      const n = bytes.copy(buffer, kept, from, Math.min(from + piece, bytes.length));
      const length = kept + n;
      let at = count.take(halves, words, 0, length);
      if (at + Record.size <= length && halves[at >>> 1] === RecordKind.found) {
        stops++;
        assert.equal(from - kept + at, foundAt, "stops at the found record");
        at = count.take(halves, words, at + Record.size, length);
      }
      kept = length - at;
      buffer.copy(buffer, 0, at, length);
    }
    assert.equal(kept, 0, `piece ${piece}: everything taken`);
    assert.equal(stops, 1, `piece ${piece}: one found record`);
    assert.deepEqual(count.byNetns, expected, `piece ${piece}`);
    assert.equal(count.sockets, seen.size);
  }
});

test("of the sockets counted, those a second pass names again count once each, under their namespace and family", () => {
  const count = new HeldCount();
  const held: Held[] = [];
  for (let i = 0; i < 3000; i++)
    held.push({ netns: 0xf0000001 + (i % 3), family: i % 2 ? AF_INET6 : AF_INET, inode: 5_000_000 + i });
  const bytes = laid(held, held.length);
  const words = new Uint32Array(bytes.buffer);
  assert.equal(
    count.take(new Uint16Array(bytes.buffer), words, 0, bytes.length),
    held.length * Record.heldSize,
  );
  // Every seventh counted socket, some twice (held by two descriptors), and sockets never counted;
  // none of the third namespace's.
  const seen: number[] = [];
  const expected = new Map<number, { v4: number; v6: number }>();
  held.forEach(({ netns, family, inode }, i) => {
    if (i % 7 !== 0 || i % 3 === 2) return;
    seen.push(inode, ...(i % 5 === 0 ? [inode] : []), 9_000_000 + i);
    const tally = expected.get(netns) ?? { v4: 0, v6: 0 };
    expected.set(netns, tally);
    if (family === AF_INET6) tally.v6++;
    else tally.v4++;
  });
  const inodes = Uint32Array.from(seen);
  // In two pieces, as two reads.
  count.seenAgain(inodes, 0, 100);
  count.seenAgain(inodes, 100, inodes.length);
  assert.deepEqual(count.again(), expected);
  assert.ok(count.byNetns.has(0xf0000003));
  assert.equal(
    count.again().get(0xf0000003),
    undefined,
    "a namespace none of whose sockets was met again is absent",
  );
  count.seenAgain(inodes, 0, inodes.length);
  assert.deepEqual(count.again(), expected, "a socket is met again once");
});
