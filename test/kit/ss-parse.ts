/**
 * A parser for the output of `ss -H -n -e` (iproute2 misc/ss.c), the oracle sockdiag is compared
 * with. Forms seen on iproute2 6.1: "127.0.0.1:80", "127.0.0.1%lo:80", "[::1]:80",
 * "[::ffff:127.0.0.1]:80", "0.0.0.0:*", "[::]:*", "*:80" (an IPv6 wildcard that is not v6only);
 * unix rows are "NAME INODE PEERNAME PEERINODE" (NAME may hold spaces, "@" starts an abstract name);
 * -e adds "ino:N" and "sk:HEXCOOKIE" on inet rows (on unix rows "ino:" is the bound file's inode).
 * ss drops the Netid column when one socket table is asked for and the State column when one state is
 * (plain `ss -u` shows only connected UDP sockets, without a State column).
 */
import type { StateName } from "../../src/diag/states.js";
import { canonicalAddress } from "./sockaddr.js";

/** One socket as ss printed it. Addresses are canonical text without brackets or "%dev"; "*" ports are 0. */
export interface SsRecord {
  /** ss's Netid: "tcp", "udp", "mptcp", "raw", "u_str", "u_dgr", "u_seq", "nl", ... */
  netid: string;
  /** The state by its ss filter name (UNCONN is "close", LISTEN "listening"). */
  state: StateName;
  /** "inet"/"inet6" for inet netids (from the address form), "unix", or "other" (netlink, packet...). */
  family: "inet" | "inet6" | "unix" | "other";
  recvQ: number;
  sendQ: number;
  /** Inet: local address. Unix: the name ("*" unnamed, "@x" abstract). Other: ss's local column. */
  src: string;
  sport: number;
  dst: string;
  dport: number;
  /** The device after "%" in the local address (SO_BINDTODEVICE), if any. */
  device?: string;
  /** Socket inode: ino:N on inet rows, the local "port" column on unix rows; 0 when ss showed none. */
  inode: number;
  /** The cookie from sk:HEX as a decimal string; undefined when ss showed none (unix rows). */
  cookie: string | undefined;
  /** Unix: the peer's inode (0 when none). */
  peer?: number;
  /** The tokens after the addresses ("ino:..", "sk:..", "cgroup:..", "v6only:0", "<->", ...). */
  extra: string[];
}

/** Values for the columns ss leaves out: Netid when one table was asked for, State when one state. */
export interface SsColumnDefaults {
  netid?: string;
  state?: StateName;
}

/** SsParseError names the line ss printed that the parser could not read, and why. */
export class SsParseError extends Error {
  override readonly name = "SsParseError";
}

/** SS_STATES maps ss's printed state names (ss.c sstate_name) to the ss filter names. */
export const SS_STATES: Readonly<Record<string, StateName>> = {
  UNKNOWN: "unknown",
  ESTAB: "established",
  "SYN-SENT": "syn-sent",
  "SYN-RECV": "syn-recv",
  "FIN-WAIT-1": "fin-wait-1",
  "FIN-WAIT-2": "fin-wait-2",
  "TIME-WAIT": "time-wait",
  UNCONN: "close",
  "CLOSE-WAIT": "close-wait",
  "LAST-ACK": "last-ack",
  LISTEN: "listening",
  CLOSING: "closing",
  "NEW-SYN-RECV": "new-syn-recv",
  "BOUND-INACTIVE": "bound-inactive",
};

const INET_NETIDS = new Set(["tcp", "udp", "mptcp", "raw", "sctp", "dccp"]);
const UNIX_TAIL = /^(.*?)\s+(\d+)\s+(\S+)\s+(\d+)(?:\s+(.*))?$/;
const DIGITS = /^\d+$/;

/** parseSs parses every socket line of `ss -H -n -e` output; continuation lines (-i, -m) join their socket's line. */
export function parseSs(output: string, defaults: SsColumnDefaults = {}): SsRecord[] {
  const lines: string[] = [];
  for (const line of output.split("\n")) {
    if (line.trim() === "") continue;
    if (/^\s/.test(line) && lines.length > 0) lines[lines.length - 1] += ` ${line.trim()}`;
    else lines.push(line);
  }
  return lines.map((line) => parseSsLine(line, defaults));
}

/** parseSsLine parses one socket line; throws SsParseError quoting the line when it cannot. */
export function parseSsLine(line: string, defaults: SsColumnDefaults = {}): SsRecord {
  const tokens = [...line.matchAll(/\S+/g)];
  const text = (i: number) => tokens[i]?.[0] ?? "";
  const q = [0, 1, 2].find((i) => DIGITS.test(text(i)) && DIGITS.test(text(i + 1)));
  if (q === undefined) throw new SsParseError(`no Recv-Q/Send-Q columns in ss line: ${JSON.stringify(line)}`);
  let netid = defaults.netid;
  let state = defaults.state;
  for (let i = 0; i < q; i++) {
    const word = text(i);
    const s = SS_STATES[word];
    if (s) state = s;
    else netid = word;
  }
  const rest = line.slice(tokens[q + 2]?.index ?? line.length).trim();
  const unixLayout = netid === undefined ? DIGITS.test(text(q + 3)) : netid.startsWith("u_");
  netid ??= unixLayout ? "unix" : undefined;
  if (netid === undefined)
    throw new SsParseError(`ss printed no Netid column; pass defaults.netid: ${JSON.stringify(line)}`);
  const [local = "", remote = "", ...extra] = rest.split(/\s+/);
  const inet = !unixLayout && INET_NETIDS.has(netid);
  const l = inet ? splitEndpoint(local, line) : undefined;
  const r = inet ? splitEndpoint(remote, line) : undefined;
  // A UDP socket has two states, and is "established" exactly when it is connected.
  if (state === undefined && netid === "udp" && r) state = r.port === 0 ? "close" : "established";
  if (state === undefined) {
    throw new SsParseError(`ss printed no State column; pass defaults.state: ${JSON.stringify(line)}`);
  }
  const base = { netid, state, recvQ: Number(text(q)), sendQ: Number(text(q + 1)) };
  if (unixLayout) return unixRecord(base, rest, line);
  if (!l || !r) {
    const none = { sport: 0, dport: 0, inode: 0, cookie: undefined };
    return { ...base, ...none, family: "other", src: local, dst: remote, extra };
  }
  const family = l.v6 || r.v6 ? "inet6" : "inet";
  const record: SsRecord = {
    ...base,
    family,
    src: canonicalAddress(l.host === "*" ? "::" : l.host),
    sport: l.port,
    dst: canonicalAddress(r.host === "*" ? "::" : r.host),
    dport: r.port,
    inode: Number(extraValue(extra, "ino") ?? 0),
    cookie: cookieOf(extraValue(extra, "sk")),
    extra,
  };
  if (l.device) record.device = l.device;
  return record;
}

function unixRecord(
  base: Pick<SsRecord, "netid" | "state" | "recvQ" | "sendQ">,
  rest: string,
  line: string,
): SsRecord {
  const m = UNIX_TAIL.exec(rest);
  if (!m) throw new SsParseError(`unix row not "NAME INODE PEER PEERINODE": ${JSON.stringify(line)}`);
  const [, src = "", inode = "0", dst = "", peer = "0", tail = ""] = m;
  const extra = tail === "" ? [] : tail.split(/\s+/);
  return {
    ...base,
    family: "unix",
    src,
    sport: 0,
    dst,
    dport: 0,
    inode: Number(inode),
    cookie: undefined,
    peer: Number(peer),
    extra,
  };
}

interface SplitEndpoint {
  host: string;
  port: number;
  v6: boolean;
  device?: string;
}

/** splitEndpoint reads "HOST[%DEV]:PORT" with HOST bracketed for IPv6, or "*"; a "*" port is 0. */
function splitEndpoint(text: string, line: string): SplitEndpoint {
  const colon = text.lastIndexOf(":");
  if (colon <= 0) throw new SsParseError(`address "${text}" has no port in ss line: ${JSON.stringify(line)}`);
  const portText = text.slice(colon + 1);
  if (portText !== "*" && !DIGITS.test(portText))
    throw new SsParseError(`bad port "${portText}" in ss line: ${JSON.stringify(line)}`);
  let host = text.slice(0, colon);
  let device: string | undefined;
  const percent = host.indexOf("%");
  if (percent >= 0) {
    device = host.slice(percent + 1).replace(/\]$/, "");
    host = host.slice(0, percent) + (host.startsWith("[") ? "]" : "");
  }
  const bracketed = host.startsWith("[") && host.endsWith("]");
  if (bracketed) host = host.slice(1, -1);
  const out: SplitEndpoint = {
    host,
    port: portText === "*" ? 0 : Number(portText),
    v6: bracketed || host === "*",
  };
  if (device !== undefined) out.device = device;
  return out;
}

function extraValue(extra: readonly string[], key: string): string | undefined {
  const prefix = `${key}:`;
  return extra.find((t) => t.startsWith(prefix))?.slice(prefix.length);
}

function cookieOf(hex: string | undefined): string | undefined {
  return hex !== undefined && /^[0-9a-f]+$/i.test(hex) ? BigInt(`0x${hex}`).toString() : undefined;
}
