/**
 * Sockets and conntrack entries as text and JSON: ss's table, its cells and timers, JSON written
 * as bytes, conntrack -L's lines, and the escaping of names from outside.
 */
export { conntrackLine } from "./conntrack-table.js";
export { escapeText } from "./escape.js";
export { stringifyForOutput, writeJson } from "./json.js";
export { LISTING_BATCH_BYTES, renderTable, type TableOptions, TableWriter } from "./table.js";
export { msTimerText } from "./timers.js";
