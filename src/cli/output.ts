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

/** Write text or bytes to stdout, chunk after chunk. */
export function writeOut(text: string | Uint8Array | readonly (string | Uint8Array)[]): void {
  for (const chunk of typeof text === "string" || text instanceof Uint8Array ? [text] : text)
    if (chunk.length > 0) process.stdout.write(chunk);
}

const LINES_PER_WRITE = 2048;

/** Render sockets in the chosen format, as chunks to write in order. */
export function renderSockets(
  sockets: readonly Socket[],
  format: Format,
  table: TableOptions,
): (string | Buffer)[] {
  if (format === "table") return [renderTable(sockets, table)];
  const chunks: string[] = [];
  writeJson(sockets, format, (chunk) => chunks.push(chunk), table.owners);
  return chunks;
}

/**
 * Write sockets as JSON while they stream in: a 100,000-socket listing never holds more than one
 * chunk of lines. "json" is one array, "ndjson" one object per line. With `owners` (-p), each
 * object ends with an `owners` array of { pid, command, fd }, empty when no visible process holds it.
 */
export function writeJson(
  sockets: Iterable<Socket>,
  format: "json" | "ndjson",
  write: (chunk: string) => void = writeOut,
  owners?: ReadonlyMap<number, readonly SocketOwner[]>,
): void {
  const lines: string[] = [];
  const separator = format === "json" ? ",\n" : "\n";
  let first = true;
  const flush = () => {
    if (lines.length === 0) return;
    const text = lines.join(separator);
    write(format === "json" ? `${first ? "[\n" : ",\n"}${text}` : `${text}\n`);
    first = false;
    lines.length = 0;
  };
  for (const s of sockets) {
    lines.push(owners ? withOwners(s.jsonText(), owners.get(s.inode)) : s.jsonText());
    if (lines.length === LINES_PER_WRITE) flush();
  }
  flush();
  if (format === "json") write(first ? "[]\n" : "\n]\n");
}

/** A socket's JSON object text with `,"owners":[...]` added before its closing brace. */
function withOwners(json: string, list: readonly SocketOwner[] | undefined): string {
  return `${json.slice(0, -1)},"owners":${JSON.stringify(list ?? [])}}`;
}
