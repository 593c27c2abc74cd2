/**
 * BackendMap: a map from backend keys to values, for the million backends of a large cluster. A
 * Map keyed by IPv4 backend keys (numbers up to 2^49, past V8's small integers) holds each key as
 * a heap number of its own, which every collection traces and moves, and grows by rehashing all
 * its entries in one call (~100 ms at a million on a loaded node: the longest turn of a sync).
 * Here the IPv4 keys live unboxed in a Float64Array, the values beside them in one array, and an
 * Int32Array of slots (open addressing, linear probing, at most half full) points into both; a
 * growth rebuilds only the slots. IPv6 keys (bigints, rare) go to a Map beside.
 */
import type { BackendKey } from "./backend.js";

/** An empty slot. A slot holds the index of its entry plus one. */
const EMPTY = 0;
/** The fewest slots kept: a power of two. */
const MIN_SLOTS = 16;
/** 2^32, to split a key into two 32-bit words for the hash. */
const WORD = 4294967296;

export class BackendMap<V> {
  /** Each entry's key, densely from 0 to the count of IPv4 entries. */
  private keys = new Float64Array(MIN_SLOTS / 2);
  /** Each entry's value, at its key's index. */
  private readonly values: V[] = [];
  private slots = new Int32Array(MIN_SLOTS);
  private readonly v6 = new Map<bigint, V>();

  get size(): number {
    return this.values.length + this.v6.size;
  }

  get(key: BackendKey): V | undefined {
    if (typeof key === "bigint") return this.v6.get(key);
    const slot = this.find(key);
    return slot < 0 ? undefined : this.values[this.slots[slot]! - 1];
  }

  has(key: BackendKey): boolean {
    return typeof key === "bigint" ? this.v6.has(key) : this.find(key) >= 0;
  }

  set(key: BackendKey, value: V): this {
    if (typeof key === "bigint") {
      this.v6.set(key, value);
      return this;
    }
    if (!Number.isSafeInteger(key) || key < 0) throw new RangeError(`not a backend key: ${key}`);
    const slot = this.find(key);
    if (slot >= 0) {
      this.values[this.slots[slot]! - 1] = value;
      return this;
    }
    const index = this.values.length;
    if (index === this.keys.length) {
      const keys = new Float64Array(index * 2);
      keys.set(this.keys);
      this.keys = keys;
    }
    this.keys[index] = key;
    this.values.push(value);
    if (this.values.length * 2 > this.slots.length) this.rebuild(this.slots.length * 2);
    else this.slots[~slot] = index + 1;
    return this;
  }

  /** Remove a key; the last entry takes its place, so that entries stay dense. */
  delete(key: BackendKey): boolean {
    if (typeof key === "bigint") return this.v6.delete(key);
    const slot = this.find(key);
    if (slot < 0) return false;
    const index = this.slots[slot]! - 1;
    this.free(slot);
    const last = this.values.length - 1;
    const moved = this.values.pop()!;
    if (index !== last) {
      this.keys[index] = this.keys[last]!;
      this.values[index] = moved;
      this.slots[this.find(this.keys[index]!)] = index + 1;
    }
    // A map that shrank to an eighth of its slots gives the rest back.
    if (this.values.length * 8 < this.slots.length && this.slots.length > MIN_SLOTS)
      this.rebuild(this.slots.length / 2);
    return true;
  }

  /** The slot holding `key`, or, when none does, ~ the empty slot where it would go. */
  private find(key: number): number {
    const mask = this.slots.length - 1;
    for (let slot = hash(key) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]!;
      if (entry === EMPTY) return ~slot;
      if (this.keys[entry - 1] === key) return slot;
    }
  }

  /**
   * Empty a slot, moving back the entries after it that probing would no longer reach (deletion
   * without tombstones, as Knuth's Algorithm R for linear probing).
   */
  private free(slot: number): void {
    const mask = this.slots.length - 1;
    let hole = slot;
    for (let next = (hole + 1) & mask; this.slots[next] !== EMPTY; next = (next + 1) & mask) {
      const home = hash(this.keys[this.slots[next]! - 1]!) & mask;
      // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
      const reachable = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (reachable) continue;
      this.slots[hole] = this.slots[next]!;
      hole = next;
    }
    this.slots[hole] = EMPTY;
  }

  /** New slots (a power of two) for the entries; the key array follows at half their number. */
  private rebuild(slotCount: number): void {
    const count = this.values.length;
    this.slots = new Int32Array(slotCount);
    if (this.keys.length > slotCount / 2) this.keys = this.keys.slice(0, slotCount / 2);
    for (let index = 0; index < count; index++) this.slots[~this.find(this.keys[index]!)] = index + 1;
  }
}

/** A 32-bit hash of a key (an integer below 2^53): its two words mixed (MurmurHash3's fmix32). */
function hash(key: number): number {
  let h = (key >>> 0) ^ Math.imul(Math.floor(key / WORD), 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
