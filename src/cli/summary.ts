/**
 * `ls -s`: counts of the selected sockets per protocol, family and state — what `ss -s` tells,
 * taken from the same sock_diag dumps as the listing (ss reads /proc/net/sockstat instead), so it
 * follows the selection: protocols, families, states, filter and namespaces.
 */
import type { Socket } from "../diag/socket.js";

/** One protocol's counts. */
export interface ProtocolCounts {
  total: number;
  /** IPv4 and IPv6 sockets (inet protocols only). */
  inet?: number;
  inet6?: number;
  /** Per state, by ss filter name, in the order first seen. */
  states: Record<string, number>;
}

/** The summary of a listing. */
export interface Summary {
  total: number;
  /** Per protocol, in the order first seen. */
  protocols: Record<string, ProtocolCounts>;
}

/** Count `sockets` (consumed once, streaming: nothing is kept but the counts). */
export function summarise(sockets: Iterable<Socket>): Summary {
  const summary: Summary = { total: 0, protocols: {} };
  for (const s of sockets) {
    summary.total++;
    let p = summary.protocols[s.protocol];
    if (!p) {
      p = s.family === "unix" ? { total: 0, states: {} } : { total: 0, inet: 0, inet6: 0, states: {} };
      summary.protocols[s.protocol] = p;
    }
    p.total++;
    if (s.family === "inet") p.inet!++;
    else if (s.family === "inet6") p.inet6!++;
    p.states[s.state] = (p.states[s.state] ?? 0) + 1;
  }
  return summary;
}

/** The summary as text: a total line, then one row per protocol with its states. */
export function formatSummary(summary: Summary): string {
  const rows = Object.entries(summary.protocols).map(([name, p]) => [
    name,
    String(p.total),
    p.inet === undefined ? "-" : String(p.inet),
    p.inet6 === undefined ? "-" : String(p.inet6),
    Object.entries(p.states)
      .map(([state, n]) => `${state} ${n}`)
      .join(", "),
  ]);
  rows.unshift(["Netid", "Total", "IPv4", "IPv6", "States"]);
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
  const lines = rows.map((r) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : c < 4 ? cell.padStart(widths[c]!) : cell))
      .join("  ")
      .trimEnd(),
  );
  return `Total: ${summary.total}\n\n${lines.join("\n")}\n`;
}
