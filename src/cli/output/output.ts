/**
 * The one print gate: sockets go to stdout as an ss-like table, one JSON array (-j) or one JSON
 * object per line (--ndjson). Reports and progress go to stderr, never mixed into stdout.
 */
import type { Socket } from "../../diag/socket.js";
import type { OptionSpec, ParsedValues } from "../io/index.js";
import { renderTable, type TableOptions, writeJson } from "../render/index.js";

export type Format = "table" | "json" | "ndjson";

export const OUTPUT_OPTIONS: readonly OptionSpec[] = [
  { name: "json", short: "j", help: "print one JSON array" },
  { name: "ndjson", help: "print one JSON object per line" },
  { name: "no-header", short: "H", help: "no table header" },
];

export function formatFromArgs(values: ParsedValues): Format {
  return values.json ? "json" : values.ndjson ? "ndjson" : "table";
}

/** Render sockets in the chosen format, as chunks to write in order. */
export function renderSockets(sockets: readonly Socket[], format: Format, table: TableOptions): Uint8Array[] {
  if (format === "table") return [renderTable(sockets, table)];
  const chunks: Uint8Array[] = [];
  writeJson(sockets, format, (chunk) => chunks.push(chunk), {
    owners: table.owners,
    timers: table.display.options,
  });
  return chunks;
}
