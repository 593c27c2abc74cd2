/**
 * The value words of `src`/`dst` and `sport`/`dport`, read as ss's parse_hostcond (misc/ss.c) reads
 * them for inet sockets:
 *   - `[ADDR]` and `[ADDR]:PORT` (the brackets may hold a prefix: `[2001:db8::/32]:53`);
 *   - `*`, `*:PORT`, `:PORT` (any address);
 *   - otherwise the port follows the last ':' after the '/' (so `10.0.0.0/8:53` and the unbracketed
 *     prefix `2001:db8::/32` work, but `::1` splits as address ":" and port "1" — write `[::1]`);
 *   - a PORT of "" or `*` is any port, so `src 10.0.0.1` and `src 10.0.0.1:*` are the same condition.
 * A port is a C number (get_integer base 0) from 0 to 65535, or a service name known for TCP or UDP.
 */
import type { HostPrefix } from "./ast.js";
import { parseCNumber, parsePrefix } from "./prefix.js";
import type { ServiceTable } from "./services.js";

/** A parsed host word: either part may be absent (any). */
export interface HostValue {
  prefix?: HostPrefix;
  port?: number;
}

/** Fail reports a reason and never returns (the parser turns it into a FilterSyntaxError). */
export type Fail = (reason: string) => never;

/** parseHostWord reads the word after `src`/`dst`. */
export function parseHostWord(word: string, services: ServiceTable, fail: Fail): HostValue {
  let addrText: string;
  let portText: string;
  if (word.startsWith("[")) {
    const close = word.indexOf("]");
    if (close < 0) fail(`"${word}" lacks the closing "]"`);
    addrText = word.slice(1, close);
    const rest = word.slice(close + 1);
    if (rest !== "" && !rest.startsWith(":")) fail(`expected ":PORT" after "]", not "${rest}"`);
    portText = rest.slice(1);
  } else if (word.startsWith("*")) {
    addrText = "";
    const rest = word.slice(1);
    if (rest !== "" && !rest.startsWith(":")) fail(`expected ":PORT" after "*", not "${rest}"`);
    portText = rest.slice(1);
  } else {
    const slash = word.indexOf("/");
    const colon = word.lastIndexOf(":");
    const hasPort = colon >= 0 && colon > slash;
    addrText = hasPort ? word.slice(0, colon) : word;
    portText = hasPort ? word.slice(colon + 1) : "";
  }
  const out: HostValue = {};
  if (addrText !== "" && addrText !== "*") {
    const prefix = parsePrefix(addrText);
    if (typeof prefix === "string") {
      const hint =
        !word.startsWith("[") && word.includes("::") ? ` (bracket IPv6 addresses: [ADDR]:PORT)` : "";
      fail(`${prefix}${hint}`);
    }
    out.prefix = prefix;
  }
  const port = parsePortText(portText, services, fail);
  if (port !== undefined) out.port = port;
  return out;
}

/**
 * parsePortWord reads the word after `sport`/`dport` and an operator: `:PORT` or `PORT`; undefined
 * means any port (`*`, or nothing after the colon).
 */
export function parsePortWord(word: string, services: ServiceTable, fail: Fail): number | undefined {
  return parsePortText(word.startsWith(":") ? word.slice(1) : word, services, fail);
}

function parsePortText(text: string, services: ServiceTable, fail: Fail): number | undefined {
  if (text === "" || text === "*") return undefined;
  if (/^[+-]?\d/.test(text)) {
    const n = parseCNumber(text);
    if (n === undefined) fail(`"${text}" is not a port number`);
    if (n > 65535) fail(`port ${text} is out of range (0-65535)`);
    return n;
  }
  const tcp = services.lookup(text, "tcp");
  const udp = services.lookup(text, "udp");
  if (tcp !== undefined && udp !== undefined && tcp !== udp)
    fail(`ambiguous port "${text}" (TCP ${tcp}, UDP ${udp})`);
  const port = tcp ?? udp;
  if (port === undefined) fail(`"${text}" does not look like a port (not a number or a known service)`);
  return port;
}
