/**
 * DecodeScratch: the state decoders reuse from one message to the next — an attribute reader, and
 * a DataView of the buffer being decoded (consecutive messages of one receive chunk share it). One
 * belongs to each stream of messages, owned by whoever reads it, so no decoder keeps state of its own.
 */
import { AttributeReader } from "../netlink/index.js";

export class DecodeScratch {
  readonly attrs = new AttributeReader();
  #viewed: Buffer | undefined;
  #view: DataView | undefined;

  /** A DataView over `buf`, the same one as long as `buf` is. */
  view(buf: Buffer): DataView {
    if (buf !== this.#viewed || !this.#view) {
      this.#viewed = buf;
      this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.#view;
  }
}
