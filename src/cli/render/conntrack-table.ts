/**
 * Conntrack entries as `conntrack -L` prints them (conntrack-tools' default output): protocol name
 * and number, seconds left, TCP state, the original tuple, [UNREPLIED], the reply tuple, [ASSURED],
 * mark, zone, use — with the namespace first when several were listed.
 */

import type { ConntrackEntry, ConntrackTuple } from "../../conntrack/index.js";
import { escapeText } from "./escape.js";

function tuple(t: ConntrackTuple): string {
  let s = `src=${t.src} dst=${t.dst}`;
  if (t.sport !== undefined) s += ` sport=${t.sport} dport=${t.dport}`;
  if (t.icmpType !== undefined) s += ` type=${t.icmpType} code=${t.icmpCode ?? 0}`;
  if (t.icmpId !== undefined) s += ` id=${t.icmpId}`;
  return s;
}

/** One entry's line, without newline. */
export function conntrackLine(e: ConntrackEntry, netnsColumn: boolean): string {
  const parts: string[] = [];
  if (netnsColumn) parts.push(escapeText(e.netns ?? "(host)").padEnd(16));
  parts.push(e.protocol.padEnd(8), String(e.protocolNumber), String(e.timeout));
  if (e.state) parts.push(e.state);
  parts.push(tuple(e.original));
  if (!e.flags.includes("SEEN_REPLY")) parts.push("[UNREPLIED]");
  parts.push(tuple(e.reply));
  if (e.flags.includes("ASSURED")) parts.push("[ASSURED]");
  if (e.flags.includes("HW_OFFLOAD")) parts.push("[HW_OFFLOAD]");
  else if (e.flags.includes("OFFLOAD")) parts.push("[OFFLOAD]");
  parts.push(`mark=${e.mark}`);
  if (e.zone !== 0) parts.push(`zone=${e.zone}`);
  parts.push(`use=${e.use}`);
  return parts.join(" ");
}
