/**
 * What `conntrack ls` and `conntrack rm` print, as the entries come: conntrack -L's lines, NDJSON
 * lines, or the items of -j's array (rm: of its `entries`, the report closing the object). Text
 * goes out in chunks, so memory stays flat however many entries a table holds.
 */
import type { ConntrackEntry } from "../../conntrack/index.js";
import type { ParsedValues } from "../io/index.js";
import { writeOut } from "../io/index.js";
import { conntrackLine } from "../render/index.js";

/** Bytes of text held before they are written. */
const CHUNK = 64 * 1024;

export class ConntrackOutput {
  private readonly format: "table" | "json" | "ndjson";
  /** Text not yet written, as bytes in a reused buffer: no string outlives its entry. */
  private readonly pending = Buffer.allocUnsafe(CHUNK);
  private bytes = 0;
  private items = 0;

  /** `opening`: what -j writes before the first item ("[", or rm's '{"entries":['). */
  constructor(
    values: ParsedValues,
    private readonly netnsColumn: boolean,
    private readonly opening = "[",
  ) {
    this.format = values.json ? "json" : values.ndjson ? "ndjson" : "table";
  }

  /** An entry listed, deleted or (in a dry run) matched. */
  add(entry: ConntrackEntry): void {
    if (this.format === "table") this.write(`${conntrackLine(entry, this.netnsColumn)}\n`);
    else if (this.format === "ndjson") this.write(`${JSON.stringify(entry)}\n`);
    else this.write(`${this.items === 0 ? this.opening : ","}${JSON.stringify(entry)}`);
    this.items++;
  }

  /** Write the rest; -j closes its array with `closing` (rm: the report and the object's end). */
  end(closing = "]"): void {
    if (this.format === "json") this.write(`${this.items === 0 ? this.opening : ""}${closing}\n`);
    this.flush();
  }

  private write(text: string): void {
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    if (this.bytes + text.length * 3 > CHUNK) this.flush();
    if (text.length * 3 > CHUNK) writeOut(text);
    else this.bytes += this.pending.write(text, this.bytes);
  }

  private flush(): void {
    if (this.bytes > 0) writeOut(this.pending.subarray(0, this.bytes));
    this.bytes = 0;
  }
}
