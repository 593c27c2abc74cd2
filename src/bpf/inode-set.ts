/**
 * A set of socket inode numbers, each with a number of the caller's, for counting each held
 * socket once and finding it again: open addressing in typed arrays, several times cheaper than a
 * Map of 100,000 numbers (the pass's count of a node's sockets). A socket's inode number is 32
 * bits (sockfs takes it from get_next_ino); a wider one is kept by its low 32 bits, so two could
 * count once: a count falls short, never over.
 */

/** Slots of a block: 16 numbers, 64 bytes, one cache line. */
const BLOCK_BITS = 4;
/** A value's mark once taken. */
const TAKEN = 2 ** 31;

export class InodeSet {
  #slots: Uint32Array;
  /** Each slot's number (below 2^31), its top bit set once taken. */
  #values: Uint32Array;
  /** 32 - log2(blocks): a key's home block is the top bits of its run's Fibonacci hash. */
  #shift: number;
  #size = 0;

  /**
   * With room for `expected` numbers and a quarter more, and for 131,072 at least (1 MiB), without
   * growing: re-adding is slow, most of all in a process that just started.
   */
  constructor(expected = 0) {
    let bits = 18;
    while (2 ** bits < 2.5 * expected) bits++;
    this.#slots = new Uint32Array(2 ** bits);
    this.#values = new Uint32Array(2 ** bits);
    this.#shift = 32 - (bits - BLOCK_BITS);
  }

  /** How many numbers it holds. */
  get size(): number {
    return this.#size;
  }

  /** Adds `inode` (not 0) with `value` (below 2^31); whether it was new (else its value stays). */
  add(inode: number, value = 0): boolean {
    const key = inode >>> 0 || 1;
    if (2 * (this.#size + 1) > this.#slots.length) this.#grow();
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let i = this.#home(key); ; i++) {
      const at = i & mask;
      const slot = slots[at] as number;
      if (slot === key) return false;
      if (slot === 0) {
        slots[at] = key;
        this.#values[at] = value;
        this.#size++;
        return true;
      }
    }
  }

  /**
   * The value `inode` was added with, the first time it is asked for; -1 when it is not in the set
   * or was taken already (a socket held twice is found again once).
   */
  take(inode: number): number {
    const key = inode >>> 0 || 1;
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let i = this.#home(key); ; i++) {
      const at = i & mask;
      const slot = slots[at] as number;
      if (slot === 0) return -1;
      if (slot === key) {
        const value = this.#values[at] as number;
        if (value >= TAKEN) return -1;
        this.#values[at] = value + TAKEN;
        return value;
      }
    }
  }

  /**
   * A run of 16 consecutive numbers shares a home block: get_next_ino hands a CPU's sockets out in
   * order, so the sockets a task made one after another, met one after another, touch one cache
   * line each 16 instead of one each (the set is larger than this machine's L2).
   */
  #home(key: number): number {
    return (
      ((Math.imul(key >>> BLOCK_BITS, 0x9e3779b1) >>> this.#shift) << BLOCK_BITS) |
      (key & ((1 << BLOCK_BITS) - 1))
    );
  }

  #grow(): void {
    const old = this.#slots;
    const values = this.#values;
    this.#slots = new Uint32Array(old.length * 2);
    this.#values = new Uint32Array(old.length * 2);
    this.#shift--;
    this.#size = 0;
    old.forEach((key, at) => {
      if (key !== 0) this.add(key, values[at]);
    });
  }
}
