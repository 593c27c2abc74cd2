/** InodeSet against a Set: the same answers for sequential, repeated and random inode numbers. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { InodeSet } from "../../src/bpf/inode-set.js";

for (const [what, expected] of [
  ["across its growth", undefined],
  ["made with room for them", 300_000],
] as const) {
  test(`InodeSet.add answers as a Set would, ${what}`, () => {
    const set = new InodeSet(expected);
    const oracle = new Set<number>();
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed;
    };
    // Sequential numbers as sockfs hands them out, each seen up to three times, and random ones.
    const inodes: number[] = [];
    for (let i = 0; i < 150_000; i++) inodes.push(4_000_000 + i, ...(i % 7 === 0 ? [4_000_000 + i] : []));
    for (let i = 0; i < 100_000; i++) inodes.push(random() || 1);
    for (let i = 0; i < 30_000; i++) inodes.push(inodes[random() % inodes.length] as number);
    let added = 0;
    for (const inode of inodes) {
      const fresh = !oracle.has(inode);
      oracle.add(inode);
      assert.equal(set.add(inode), fresh, `inode ${inode}`);
      if (fresh) added++;
    }
    assert.equal(added, oracle.size);
    assert.equal(set.size, oracle.size);
    assert.ok(added > 200_000, "well past the least room it is made with");
  });
}

test("InodeSet.take gives each number's value once, across its growth; -1 for a number not in it", () => {
  const set = new InodeSet();
  for (let i = 0; i < 200_000; i++) set.add(7_000_000 + i * 3, i);
  assert.equal(set.add(7_000_000, 99), false, "added again: its value stays");
  for (let i = 0; i < 200_000; i += 997) {
    assert.equal(set.take(7_000_000 + i * 3), i);
    assert.equal(set.take(7_000_000 + i * 3), -1, "taken already");
    assert.equal(set.take(7_000_000 + i * 3 + 1), -1, "never added");
  }
  assert.equal(set.size, 200_000);
});
