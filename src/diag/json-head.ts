/** The head of a non-inet socket's JSON (the fields each starts with, in this order), and JSON-safe 64-bit counters. */
import type { SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** The fields every non-inet socket's toJSON starts with: netns (its label), family, protocol, type, state. */
export function jsonHead(s: {
  netns?: SocketNetns | undefined;
  family: string;
  protocol: string;
  type: string;
  state: StateName;
}): Record<string, unknown> {
  return {
    netns: s.netns?.label ?? null,
    family: s.family,
    protocol: s.protocol,
    type: s.type,
    state: s.state,
  };
}

/** `fields` with its bigints as decimal strings (JSON has no 64-bit integers) and undefined ones left out. */
export function jsonSafe(fields: object): Record<string, number | string | boolean> {
  const out: Record<string, number | string | boolean> = {};
  for (const [k, v] of Object.entries(fields) as [string, number | bigint | boolean | undefined][])
    if (v !== undefined) out[k] = typeof v === "bigint" ? v.toString() : v;
  return out;
}
