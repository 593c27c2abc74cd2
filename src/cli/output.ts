/**
 * The one print gate: sockets go to stdout as an ss-like table, one JSON array (-j) or one JSON
 * object per line (--ndjson). Reports and progress go to stderr, never mixed into stdout.
 */
import type { Socket } from "../diag/socket.js";
import type { SocketOwner } from "../sockets/index.js";
import type { OptionSpec, ParsedValues } from "./options.js";
import { renderTable, type TableOptions } from "./table.js";

export type Format = "table" | "json" | "ndjson";

export const OUTPUT_OPTIONS: readonly OptionSpec[] = [
  { name: "json", short: "j", help: "print one JSON array" },
  { name: "ndjson", help: "print one JSON object per line" },
  { name: "no-header", short: "H", help: "no table header" },
];

export function formatFromArgs(values: ParsedValues): Format {
  return values.json ? "json" : values.ndjson ? "ndjson" : "table";
}

/** Write `text` to stdout in one call (large outputs are written as one string, then flushed by Node). */
export function writeOut(text: string): void {
  if (text.length > 0) process.stdout.write(text);
}

/**
 * Render sockets in the chosen format. With owners (-p), each JSON object gets an `owners` array of
 * { pid, command, fd } (empty when no process this caller may inspect holds the socket).
 */
export function renderSockets(sockets: readonly Socket[], format: Format, table: TableOptions): string {
  if (format === "table") return renderTable(sockets, table);
  const json = (s: Socket) => jsonLine(s, table.owners);
  if (format === "ndjson") return sockets.map((s) => `${json(s)}\n`).join("");
  if (sockets.length === 0) return "[]\n";
  return `[\n${sockets.map(json).join(",\n")}\n]\n`;
}

function jsonLine(s: Socket, owners: Map<number, SocketOwner[]> | undefined): string {
  if (!owners) return JSON.stringify(s);
  return JSON.stringify({ ...s.toJSON(), owners: owners.get(s.inode) ?? [] });
}
