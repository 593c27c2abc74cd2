/**
 * HeldEntries: the entries a delete batch waits on, kept as copies of their dump messages in one
 * reused buffer rather than as objects. Objects held across a batch outlive the young generation's
 * collections and pile up in the old one until a major collection; bytes in a reused buffer do not.
 * An entry is decoded again only when its outcome needs it (a listener, a failure record).
 */
import { type ByteSpan, type ConntrackEntry, EntryDecoder } from "../ctnl/index.js";
import { copyBytes } from "../netlink/index.js";

/** Bytes held per entry at first; the buffer grows when messages are larger. */
const TYPICAL_MESSAGE_BYTES = 320;

export class HeldEntries {
  private bytes: Buffer;
  /** Where entry i's message ends in `bytes` (it starts where entry i-1's ends). */
  private readonly ends: Int32Array;
  private readonly labels: (string | undefined)[] = [];
  private readonly decoder = new EntryDecoder();
  /** How many entries are held. */
  count = 0;

  constructor(readonly capacity: number) {
    this.bytes = Buffer.allocUnsafe(capacity * TYPICAL_MESSAGE_BYTES);
    this.ends = new Int32Array(capacity);
  }

  /** Hold a copy of the message buf[message] listed in namespace `netns`. */
  hold(buf: Buffer, message: ByteSpan, netns: string | undefined): void {
    const start = this.end(this.count);
    const end = start + message.length;
    if (end > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(end, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, start);
      this.bytes = grown;
    }
    copyBytes(buf, message.offset, message.offset + message.length, this.bytes, start);
    this.ends[this.count] = end;
    this.labels[this.count] = netns;
    this.count++;
  }

  /** Entry i, decoded anew from its held message. */
  entry(i: number): ConntrackEntry {
    const start = this.end(i);
    return this.decoder.decode(this.bytes, start, this.ends[i]! - start, this.labels[i]);
  }

  /** Hold nothing. */
  clear(): void {
    this.count = 0;
  }

  private end(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }
}
