/**
 * The pass's held records counted (record.ts): each UDP socket once, by its inode number, under
 * its namespace and family — as sockstat's `UDP: inuse` and `UDP6: inuse` count them.
 */
import { AF_INET6 } from "../sys/index.js";
import { InodeSet } from "./inode-set.js";
import { Record, RecordKind } from "./record.js";

/** UDP sockets with a local port that tasks hold in a namespace, each once, by family. */
export interface HeldUdp {
  readonly v4: number;
  readonly v6: number;
}

export class HeldCount {
  /** By namespace (its inode number); a namespace with none is absent. */
  readonly byNetns = new Map<number, { v4: number; v6: number }>();
  readonly #counted: InodeSet;
  /** The namespace of the last socket counted, and its tally: a task's sockets mostly share one. */
  #netns = -1;
  #tally = { v4: 0, v6: 0 };

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
    let netns = this.#netns;
    let tally = this.#tally;
    let i = at;
    for (; i + Record.heldSize <= length; i += Record.heldSize) {
      if (halves[(i + Record.kind) >>> 1] !== RecordKind.held) break;
      if (!counted.add(words[(i + Record.inode) >>> 2] as number)) continue;
      const ns = words[(i + Record.netns) >>> 2] as number;
      if (ns !== netns) {
        netns = ns;
        const known = this.byNetns.get(ns);
        tally = known ?? { v4: 0, v6: 0 };
        if (!known) this.byNetns.set(ns, tally);
      }
      if (halves[(i + Record.family) >>> 1] === AF_INET6) tally.v6++;
      else tally.v4++;
    }
    this.#netns = netns;
    this.#tally = tally;
    return i;
  }
}
