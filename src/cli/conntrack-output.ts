/**
 * What `conntrack ls` and `conntrack rm` print, as the entries come: conntrack -L's lines, NDJSON
 * lines, or the items of -j's array (rm: of its `entries`, the report closing the object). Text
 * goes out in chunks, so memory stays flat however many entries a table holds.
 */
import type { ConntrackEntry } from "../conntrack/index.js";
import { conntrackLine } from "./conntrack-table.js";
import type { ParsedValues } from "./options.js";
import { writeOut } from "./stdout.js";

/** Bytes of text held before they are written. */
const CHUNK = 64 * 1024;

export class ConntrackOutput {
  private readonly format: "table" | "json" | "ndjson";
  private pending: string[] = [];
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
    let text: string;
    if (this.format === "table") text = `${conntrackLine(entry, this.netnsColumn)}\n`;
    else if (this.format === "ndjson") text = `${JSON.stringify(entry)}\n`;
    else text = `${this.items === 0 ? this.opening : ","}${JSON.stringify(entry)}`;
    this.items++;
    this.pending.push(text);
    this.bytes += text.length;
    if (this.bytes >= CHUNK) this.flush();
  }

  /** Write the rest; -j closes its array with `closing` (rm: the report and the object's end). */
  end(closing = "]"): void {
    if (this.format === "json") this.pending.push(`${this.items === 0 ? this.opening : ""}${closing}\n`);
    this.flush();
  }

  private flush(): void {
    if (this.pending.length > 0) writeOut(this.pending.join(""));
    this.pending = [];
    this.bytes = 0;
  }
}
