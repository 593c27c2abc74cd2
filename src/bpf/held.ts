/**
 * The pass's held records counted (record.ts): each UDP socket once, by its inode number, under
 * its namespace and family — as sockstat's `UDP: inuse` and `UDP6: inuse` count them. A second
 * pass's socket inode numbers then count, of those, the sockets still there: each was alive at
 * every moment between its two sightings.
 */
import { AF_INET6 } from "../sys/index.js";
import { InodeSet } from "./inode-set.js";
import { Record, RecordKind } from "./record.js";

/** UDP sockets with a local port that tasks hold in a namespace, each once, by family. */
export interface HeldUdp {
  readonly v4: number;
  readonly v6: number;
}

/** A namespace's held sockets by family, as counted so far. */
interface Tally {
  v4: number;
  v6: number;
}

export class HeldCount {
  /**
   * Each namespace's tally by its number — the inode set keeps with each socket twice its tally's
   * number, plus 1 for IPv6 — and of each, the sockets seenAgain met; the numbers by namespace.
   */
  readonly #tallies: Tally[] = [];
  readonly #again: Tally[] = [];
  readonly #numbers = new Map<number, number>();
  readonly #counted: InodeSet;
  /** The namespace of the last socket counted, and its tally's number: a task's sockets mostly share one. */
  #netns = -1;
  #tally = -1;

  /** With room for `expected` sockets (a pass's count is the next one's good guess). */
  constructor(expected = 0) {
    this.#counted = new InodeSet(expected);
  }

  /** Sockets counted so far. */
  get sockets(): number {
    return this.#counted.size;
  }

  /**
   * Counts the held records from byte `at` of a read, up to `length` or the first record of
   * another kind, and answers where it stopped. `halves` and `words` view the read from its start:
   * the program wrote the records in host order, read so cheaper than through a DataView.
   */
  take(halves: Uint16Array, words: Uint32Array, at: number, length: number): number {
    const counted = this.#counted;
    const tallies = this.#tallies;
    let netns = this.#netns;
    let tally = this.#tally;
    let i = at;
    for (; i + Record.heldSize <= length; i += Record.heldSize) {
      if (halves[(i + Record.kind) >>> 1] !== RecordKind.held) break;
      const ns = words[(i + Record.netns) >>> 2] as number;
      if (ns !== netns) {
        netns = ns;
        tally = this.#tallyOf(ns);
      }
      const v6 = halves[(i + Record.family) >>> 1] === AF_INET6 ? 1 : 0;
      if (!counted.add(words[(i + Record.inode) >>> 2] as number, 2 * tally + v6)) continue;
      const t = tallies[tally] as Tally;
      if (v6) t.v6++;
      else t.v4++;
    }
    this.#netns = netns;
    this.#tally = tally;
    return i;
  }

  /**
   * Counts, of the sockets counted, those whose inode numbers `words[from..to)` name (a second
   * pass's socket inode numbers, 32 bits each), each once.
   */
  seenAgain(words: Uint32Array, from: number, to: number): void {
    const counted = this.#counted;
    const tallies = this.#again;
    for (let i = from; i < to; i++) {
      const value = counted.take(words[i] as number);
      if (value < 0) continue;
      const again = tallies[value >>> 1] as Tally;
      if (value & 1) again.v6++;
      else again.v4++;
    }
  }

  /** By namespace (its inode number), the sockets counted; a namespace with none is absent. */
  get byNetns(): Map<number, HeldUdp> {
    return this.#byNetns(this.#tallies);
  }

  /** By namespace, the sockets counted that seenAgain met again; a namespace with none is absent. */
  again(): Map<number, HeldUdp> {
    return this.#byNetns(this.#again);
  }

  #byNetns(tallies: readonly Tally[]): Map<number, HeldUdp> {
    const out = new Map<number, HeldUdp>();
    for (const [netns, number] of this.#numbers) {
      const tally = tallies[number] as Tally;
      if (tally.v4 + tally.v6 > 0) out.set(netns, tally);
    }
    return out;
  }

  #tallyOf(netns: number): number {
    const known = this.#numbers.get(netns);
    if (known !== undefined) return known;
    this.#again.push({ v4: 0, v6: 0 });
    this.#numbers.set(netns, this.#tallies.length);
    return this.#tallies.push({ v4: 0, v6: 0 }) - 1;
  }
}
