/**
 * Socket state names and groups exactly as ss's filter language spells them (misc/ss.c sstate_name
 * and the `state` word), and the kernel bit masks they stand for.
 */
import {
  TCP_BOUND_INACTIVE,
  TCP_CLOSE,
  TCP_LISTEN,
  TCP_NEW_SYN_RECV,
  TCP_SYN_RECV,
  TCP_SYN_SENT,
  TCP_TIME_WAIT,
} from "./constants.js";

/** A socket state by its ss name. UDP reports "established" when connected and "close" when not. */
export type StateName =
  | "unknown"
  | "established"
  | "syn-sent"
  | "syn-recv"
  | "fin-wait-1"
  | "fin-wait-2"
  | "time-wait"
  | "close"
  | "close-wait"
  | "last-ack"
  | "listening"
  | "closing"
  | "new-syn-recv"
  | "bound-inactive";

/** STATE_NAMES[state] is the ss name of kernel state number `state`. */
export const STATE_NAMES: readonly StateName[] = [
  "unknown",
  "established",
  "syn-sent",
  "syn-recv",
  "fin-wait-1",
  "fin-wait-2",
  "time-wait",
  "close",
  "close-wait",
  "last-ack",
  "listening",
  "closing",
  "new-syn-recv",
  "bound-inactive",
];

/** stateName returns the ss name of a kernel state number ("unknown" past the table). */
export function stateName(state: number): StateName {
  return STATE_NAMES[state] ?? "unknown";
}

const STATE_CODES = new Map(STATE_NAMES.map((name, code) => [name, code]));

/** stateCode returns the kernel state number of an ss state name (0 for an unknown name). */
export function stateCode(name: StateName): number {
  return STATE_CODES.get(name) ?? 0;
}

const bit = (s: number) => 1 << s;

/** Every state bit the kernel knows (ss's SS_ALL). */
export const ALL_STATES = (1 << (TCP_BOUND_INACTIVE + 1)) - 2;

// ss's default without -a, -l or a state word (SS_CONN): connected, and not in TIME_WAIT or
// SYN_RECV. NEW_SYN_RECV is reported as SYN_RECV; BOUND_INACTIVE is never connected.
const NOT_CONN = bit(TCP_LISTEN) | bit(TCP_CLOSE) | bit(TCP_NEW_SYN_RECV) | bit(TCP_BOUND_INACTIVE);

/** The states ss lists by default (SS_CONN): what `sockdiag ls` lists without -a, -l or `state`. */
export const DEFAULT_STATES = ALL_STATES & ~(NOT_CONN | bit(TCP_TIME_WAIT) | bit(TCP_SYN_RECV));

// The `connected` group is wider than the default (ss.c scan_state): every state but LISTEN and CLOSE.
const CONNECTED = ALL_STATES & ~NOT_CONN;

/** The state groups ss accepts after `state`/`exclude`, with the masks ss gives them. */
export const STATE_GROUPS: Readonly<Record<string, number>> = {
  all: ALL_STATES,
  connected: CONNECTED,
  synchronized: CONNECTED & ~bit(TCP_SYN_SENT),
  bucket: bit(TCP_SYN_RECV) | bit(TCP_TIME_WAIT),
  big: ALL_STATES & ~(bit(TCP_SYN_RECV) | bit(TCP_NEW_SYN_RECV) | bit(TCP_TIME_WAIT)),
};

const aliases: Readonly<Record<string, number>> = {
  closed: TCP_CLOSE,
  "syn-rcv": TCP_SYN_RECV,
  unconnected: TCP_CLOSE,
  unconn: TCP_CLOSE,
  listen: TCP_LISTEN,
};

/** The bit mask for one ss state word (a name, alias or group), or undefined when unknown. */
export function stateMask(word: string): number | undefined {
  word = word.toLowerCase(); // ss compares with strcasecmp
  const group = STATE_GROUPS[word];
  if (group !== undefined) return group;
  const alias = aliases[word];
  if (alias !== undefined) return bit(alias);
  const index = STATE_NAMES.indexOf(word as StateName);
  return index > 0 ? bit(index) : undefined;
}

/** Every word stateMask accepts, for messages and completion. */
export function stateWords(): string[] {
  return [...STATE_NAMES.slice(1), ...Object.keys(aliases), ...Object.keys(STATE_GROUPS)];
}
