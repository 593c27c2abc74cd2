/**
 * What the commands print: the output formats of a socket listing, kill's and conntrack's output
 * as it happens, and the reports on stderr (namespace failures, destroy outcomes).
 */
export { ConntrackOutput } from "./conntrack-output.js";
export { KillOutput } from "./kill-output.js";
export { type Format, formatFromArgs, OUTPUT_OPTIONS, renderSockets } from "./output.js";
export { destroyReportJson, namespacesJson, reportNamespaces } from "./report.js";
