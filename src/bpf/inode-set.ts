/**
 * A set of socket inode numbers, for counting each held socket once: open addressing in a typed
 * array, several times cheaper than a Set of 100,000 numbers (the pass's count of a node's
 * sockets). A socket's inode number is 32 bits (sockfs takes it from get_next_ino); a wider one
 * is kept by its low 32 bits, so two could count once: a count falls short, never over.
 */
export class InodeSet {
  // Room for 131,072 without growing (1 MiB): re-adding is slow in a process that just started.
  #slots = new Uint32Array(1 << 18);
  /** 32 - log2(slots): a key's home slot is the top bits of its Fibonacci hash. */
  #shift = 14;
  #size = 0;

  /** Adds `inode` (not 0); whether it was new. */
  add(inode: number): boolean {
    const key = inode >>> 0 || 1;
    if (2 * (this.#size + 1) > this.#slots.length) this.#grow();
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let i = Math.imul(key, 0x9e3779b1) >>> this.#shift; ; i++) {
      const at = i & mask;
      const slot = slots[at] as number;
      if (slot === key) return false;
      if (slot === 0) {
        slots[at] = key;
        this.#size++;
        return true;
      }
    }
  }

  #grow(): void {
    const old = this.#slots;
    this.#slots = new Uint32Array(old.length * 2);
    this.#shift--;
    this.#size = 0;
    for (const key of old) if (key !== 0) this.add(key);
  }
}
